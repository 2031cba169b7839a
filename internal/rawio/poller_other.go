//go:build !linux

package rawio

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Poller, where there is no epoll: a goroutine a watch, waiting in the
// runtime's poller on a duplicate of the descriptor.
type Poller struct {
	mu   sync.Mutex
	next uint64
	ws   map[uint64]*otherWatch
}

type otherWatch struct {
	f    *os.File
	stop atomic.Bool
}

// ThePoller is the process's poller.
var ThePoller = sync.OnceValues(func() (*Poller, error) { return &Poller{ws: map[uint64]*otherWatch{}}, nil })

// Add calls fn in a goroutine of the watch's whenever fd is readable,
// until Remove(id).
func (p *Poller) Add(fd int, fn func()) (uint64, error) {
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

// AddOnce is not offered here: a caller reads in a goroutine of its own.
func (p *Poller) AddOnce(fd int, fn func(id uint64)) (uint64, error) { return 0, errors.ErrUnsupported }

// Rearm: see AddOnce.
func (p *Poller) Rearm(id uint64, fd int) error { return errors.ErrUnsupported }

// Remove ends the watch id.
func (p *Poller) Remove(id uint64, fd int) {
	p.mu.Lock()
	w := p.ws[id]
	delete(p.ws, id)
	p.mu.Unlock()
	if w != nil {
		w.stop.Store(true)
		_ = w.f.SetReadDeadline(time.Now())
	}
}
