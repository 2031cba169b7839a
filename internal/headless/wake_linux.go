package headless

import (
	"os"

	"golang.org/x/sys/unix"
)

// fileWaker says when a file was written to (inotify): a follower at the
// end of a held run's output waits for it instead of polling.
type fileWaker struct {
	c chan struct{}
	f *os.File
}

// newFileWaker watches path; nil when it cannot (the follower polls).
func newFileWaker(path string) *fileWaker {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_MODIFY); err != nil {
		unix.Close(fd)
		return nil
	}
	w := &fileWaker{c: make(chan struct{}, 1), f: os.NewFile(uintptr(fd), "inotify")}
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := w.f.Read(buf); err != nil {
				return // closed
			}
			select {
			case w.c <- struct{}{}:
			default:
			}
		}
	}()
	return w
}

func (w *fileWaker) wake() <-chan struct{} {
	if w == nil {
		return nil
	}
	return w.c
}

func (w *fileWaker) close() {
	if w != nil {
		w.f.Close()
	}
}
