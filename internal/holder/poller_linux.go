package holder

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// poller waits for many descriptors in one goroutine: an epoll instance
// whose own descriptor waits in the runtime's poller. A pane's listening
// socket and its daemon's connection cost it no goroutine while nothing
// comes (a goroutine parked in the runtime's poller is a stack, kilobytes,
// for the pane's life).
type poller struct {
	ep int // the epoll instance; its duplicate in f is what the runtime watches

	mu   sync.Mutex // guards what follows
	next uint64
	fns  map[uint64]func()
}

// newPoller starts a poller and its goroutine, which lives as long as the
// process.
func newPoller() (*poller, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	// Non-blocking, the descriptor goes in the runtime's poller: it is
	// readable while the epoll instance has events ready.
	if err := unix.SetNonblock(ep, true); err != nil {
		unix.Close(ep)
		return nil, fmt.Errorf("epoll: %w", err)
	}
	f := os.NewFile(uintptr(ep), "epoll")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("epoll: %w", err)
	}
	p := &poller{ep: ep, fns: map[uint64]func(){}}
	go func() {
		events := make([]unix.EpollEvent, 32)
		// Every event is taken before the wait (timeout 0, until none is
		// left): the runtime's edge for the instance comes only with a new
		// event.
		_ = rc.Read(func(fd uintptr) bool {
			for {
				n, err := unix.EpollWait(int(fd), events, 0)
				if err == unix.EINTR {
					continue
				}
				if err != nil || n == 0 {
					return false
				}
				for _, ev := range events[:n] {
					id := uint64(ev.Pad)<<32 | uint64(uint32(ev.Fd))
					p.mu.Lock()
					fn := p.fns[id]
					p.mu.Unlock()
					if fn != nil {
						fn()
					}
				}
			}
		})
		// Read returns only if f is closed, which nothing does.
		_ = f
	}()
	return p, nil
}

// add calls fn in the poller's goroutine whenever fd is readable (or hung
// up), until remove(id). fn must read until the descriptor would block
// (the watch is level-triggered: what fn leaves comes back at once), must
// not wait, and must not call remove for another watch while holding a
// lock that that watch's fn takes.
func (p *poller) add(fd int, fn func()) (id uint64, err error) {
	p.mu.Lock()
	p.next++
	id = p.next
	p.fns[id] = fn
	p.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(uint32(id)), Pad: int32(uint32(id >> 32))}
	if err := unix.EpollCtl(p.ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		p.mu.Lock()
		delete(p.fns, id)
		p.mu.Unlock()
		return 0, fmt.Errorf("epoll: %w", err)
	}
	return id, nil
}

// remove ends the watch id of fd, which must still be open (a closed
// descriptor's number may be another's already). fn may still be running,
// or be called once more with a readiness taken before.
func (p *poller) remove(id uint64, fd int) {
	p.mu.Lock()
	_, ok := p.fns[id]
	delete(p.fns, id)
	p.mu.Unlock()
	if ok {
		_ = unix.EpollCtl(p.ep, unix.EPOLL_CTL_DEL, fd, nil)
	}
}

// acceptRaw accepts a connection on a non-blocking listening socket:
// non-blocking and close-on-exec (a program started meanwhile must not
// inherit it).
func acceptRaw(fd int) (int, error) {
	nfd, _, err := unix.Accept4(fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
	return nfd, err
}
