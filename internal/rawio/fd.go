package rawio

import (
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// FD is a non-blocking descriptor kept out of the runtime's poller: its
// waits are poll(2) calls that let the scheduler go on without the
// thread. Close never closes it under a use (a closed number can be
// reused by the next open).
type FD struct {
	mu   sync.RWMutex // held to use fd, and to close it
	fd   int          // -1 once closed
	wait int          // how long one poll(2) lasts, in ms (-1: until ready)
}

// NewFD takes fd (non-blocking). A wait of -1 polls until the descriptor
// is ready, for one that Close can end with shutdown(2) (a socket); a
// descriptor that cannot be shut down needs bounded waits, which are how
// long Close may wait for a use.
func NewFD(fd, waitMillis int) *FD { return &FD{fd: fd, wait: waitMillis} }

// Use runs f with the descriptor, kept open while it runs; os.ErrClosed
// once it is closed.
func (f *FD) Use(fn func(fd int) error) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.fd < 0 {
		return os.ErrClosed
	}
	return fn(f.fd)
}

// pollFor waits until fd is ready for events, shut down, or f.wait passes.
func (f *FD) pollFor(fd int, events int16) error {
	_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: events}}, f.wait)
	if err == unix.EINTR {
		return nil
	}
	return err
}

// Read reads what is there, waiting for it if nothing is; io.EOF at the
// end of the stream.
func (f *FD) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, again := 0, false
		err := f.Use(func(fd int) error {
			var err error
			n, err = Read(uintptr(fd), p)
			switch {
			case err == unix.EAGAIN:
				again = true
				return f.pollFor(fd, unix.POLLIN)
			case err == unix.EINTR:
				again = true
				return nil
			}
			return err
		})
		switch {
		case err != nil:
			return 0, err
		case again:
		case n == 0:
			return 0, io.EOF
		default:
			return n, nil
		}
	}
}

// Write writes all of p, waiting while the descriptor is full.
func (f *FD) Write(p []byte) (int, error) { return f.WriteRights(p, nil) }

// WriteRights writes all of p, with rights (descriptors to pass over a
// unix socket, unix.UnixRights) on its first byte.
func (f *FD) WriteRights(p []byte, rights []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		err := f.Use(func(fd int) error {
			var n int
			var err error
			if rights != nil {
				n, err = unix.SendmsgN(fd, p, rights, nil, unix.MSG_NOSIGNAL)
			} else {
				n, err = Write(uintptr(fd), p)
			}
			switch {
			case err == unix.EAGAIN:
				return f.pollFor(fd, unix.POLLOUT)
			case err == unix.EINTR:
				return nil
			case err != nil:
				return err
			}
			rights = nil
			written += n
			p = p[n:]
			return nil
		})
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// Close closes the descriptor, once. A socket is shut down first, which
// ends any wait on it at once (on another descriptor that fails, and
// waits end within their bound).
func (f *FD) Close() error {
	f.mu.RLock()
	if f.fd >= 0 {
		unix.Shutdown(f.fd, unix.SHUT_RDWR)
	}
	f.mu.RUnlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fd < 0 {
		return os.ErrClosed
	}
	err := unix.Close(f.fd)
	f.fd = -1
	return err
}
