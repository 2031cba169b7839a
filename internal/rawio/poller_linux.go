package rawio

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Poller waits for many descriptors in one goroutine: an epoll instance
// whose own descriptor waits in the runtime's poller. A descriptor watched
// here costs no goroutine while nothing comes (a goroutine parked in the
// runtime's poller is a stack, kilobytes, for as long as it waits).
type Poller struct {
	ep int // the epoll instance; its duplicate in f is what the runtime watches

	mu   sync.Mutex // guards what follows
	next uint64
	fns  map[uint64]func()
}

// ThePoller is the process's poller, started with its first watch.
var ThePoller = sync.OnceValues(newPoller)

// newPoller starts a poller and its goroutine, which lives as long as the
// process.
func newPoller() (*Poller, error) {
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
	p := &Poller{ep: ep, fns: map[uint64]func(){}}
	go func() {
		events := make([]unix.EpollEvent, 32)
		// Every event is taken before the wait (timeout 0, until none is
		// left): the runtime's edge for the instance comes only with a new
		// event.
		_ = rc.Read(func(fd uintptr) bool {
			for {
				n, err := epollTake(int(fd), events)
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

// Add calls fn in the poller's goroutine whenever fd is readable (or hung
// up), until Remove(id). fn must read until the descriptor would block
// (the watch is level-triggered: what fn leaves comes back at once), must
// not wait, and must not call Remove for another watch while holding a
// lock that that watch's fn takes.
func (p *Poller) Add(fd int, fn func()) (id uint64, err error) {
	return p.add(fd, func(uint64) func() { return fn }, 0)
}

// AddOnce calls fn(id) in the poller's goroutine once fd is readable (or
// hung up), then not again until Rearm(id): fn need not read, only hand
// the reading to a goroutine (fn must not wait), which rearms the watch
// when the descriptor would block. A readiness that comes between that
// read and Rearm is not lost: Rearm looks at the descriptor as it is. fn
// may be called before AddOnce returns.
func (p *Poller) AddOnce(fd int, fn func(id uint64)) (id uint64, err error) {
	return p.add(fd, func(id uint64) func() { return func() { fn(id) } }, unix.EPOLLONESHOT)
}

func (p *Poller) add(fd int, mk func(id uint64) func(), flags uint32) (id uint64, err error) {
	p.mu.Lock()
	p.next++
	id = p.next
	p.fns[id] = mk(id)
	p.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | flags, Fd: int32(uint32(id)), Pad: int32(uint32(id >> 32))}
	if err := epollCtl(p.ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		p.mu.Lock()
		delete(p.fns, id)
		p.mu.Unlock()
		return 0, fmt.Errorf("epoll: %w", err)
	}
	return id, nil
}

// Rearm lets an AddOnce watch call its fn again, at once if fd is readable
// now.
func (p *Poller) Rearm(id uint64, fd int) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: int32(uint32(id)), Pad: int32(uint32(id >> 32))}
	if err := epollCtl(p.ep, unix.EPOLL_CTL_MOD, fd, &ev); err != nil {
		return fmt.Errorf("epoll: %w", err)
	}
	return nil
}

// Remove ends the watch id of fd, which must still be open (a closed
// descriptor's number may be another's already; and the watch of a
// descriptor that another process shares outlives its close here). fn may
// still be running, or be called once more with a readiness taken before.
func (p *Poller) Remove(id uint64, fd int) {
	p.mu.Lock()
	_, ok := p.fns[id]
	delete(p.fns, id)
	p.mu.Unlock()
	if ok && fd >= 0 {
		_ = epollCtl(p.ep, unix.EPOLL_CTL_DEL, fd, &unix.EpollEvent{})
	}
}

// epoll_ctl and an epoll_wait that does not wait never block: they are made
// without telling the scheduler (see Read), once or more for every output
// of every pane.

func epollCtl(ep, op, fd int, ev *unix.EpollEvent) error {
	_, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(ep), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(ev)), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// epollTake takes the events ready now, without waiting.
func epollTake(ep int, events []unix.EpollEvent) (int, error) {
	// epoll_pwait with no signal mask: plain epoll_wait is not on every
	// architecture (arm64).
	n, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
