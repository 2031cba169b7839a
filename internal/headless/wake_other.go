//go:build !linux

package headless

// fileWaker is Linux's inotify; elsewhere a follower polls.
type fileWaker struct{}

func newFileWaker(string) *fileWaker { return nil }

func (w *fileWaker) wake() <-chan struct{} { return nil }

func (w *fileWaker) close() {}
