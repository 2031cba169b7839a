//go:build !linux

package holder

import (
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// poller, where there is no epoll: a goroutine a watch, waiting in the
// runtime's poller on a duplicate of the descriptor.
type poller struct {
	mu   sync.Mutex
	next uint64
	ws   map[uint64]*otherWatch
}

type otherWatch struct {
	f    *os.File
	stop atomic.Bool
}

func newPoller() (*poller, error) { return &poller{ws: map[uint64]*otherWatch{}}, nil }

func (p *poller) add(fd int, fn func()) (uint64, error) {
	syscall.ForkLock.RLock()
	nfd, err := unix.Dup(fd)
	if err == nil {
		unix.CloseOnExec(nfd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return 0, err
	}
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return 0, err
	}
	w := &otherWatch{f: os.NewFile(uintptr(nfd), "watch")}
	rc, err := w.f.SyscallConn()
	if err != nil {
		w.f.Close()
		return 0, err
	}
	p.mu.Lock()
	p.next++
	id := p.next
	p.ws[id] = w
	p.mu.Unlock()
	go func() {
		_ = rc.Read(func(uintptr) bool {
			if w.stop.Load() {
				return true
			}
			fn()
			return w.stop.Load()
		})
		w.f.Close()
	}()
	return id, nil
}

func (p *poller) remove(id uint64, fd int) {
	p.mu.Lock()
	w := p.ws[id]
	delete(p.ws, id)
	p.mu.Unlock()
	if w != nil {
		w.stop.Store(true)
		_ = w.f.SetReadDeadline(time.Now())
	}
}

func acceptRaw(fd int) (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	nfd, _, err := unix.Accept(fd)
	if err != nil {
		return -1, err
	}
	unix.CloseOnExec(nfd)
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return -1, err
	}
	return nfd, nil
}
