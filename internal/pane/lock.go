package pane

import "time"

// lock is a mutex that a request can give up on. The pane's own
// goroutines wait for it as long as it takes; a request that changes the
// pane (send, answer, attach, resize) waits at most LockWait, so a pane
// whose read loop is busy or stuck never holds a caller. What only reads
// the pane's state (ls, its answers, its prompt) loads the snapshot
// published at each unlock and never takes the lock.
type lock chan struct{}

func newLock() lock { return make(lock, 1) }

func (l lock) Lock()   { l <- struct{}{} }
func (l lock) Unlock() { <-l }

// lockWithin takes the lock, waiting at most d; it reports whether it did.
func (l lock) lockWithin(d time.Duration) bool {
	select {
	case l <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case l <- struct{}{}:
		return true
	case <-t.C:
		return false
	}
}

// LockWait bounds how long a request waits for a pane's lock.
const LockWait = time.Second

// InputWait bounds how long input waits for room in the pane's input queue
// (the program is not reading it).
const InputWait = 2 * time.Second
