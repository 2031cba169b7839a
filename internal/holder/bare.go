package holder

import (
	"io"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/rawio"
)

// bareConn is the holder's end of a daemon's connection, kept out of the
// runtime's poller. In the poller, every read the daemon makes would
// signal "writable" on it (room freed in its send buffer) and wake the
// holder for nothing, the daemon paying for the wake-up inside its read;
// a thread waiting in poll(2) for input only is not woken by those. The
// holder's writes seldom wait (the daemon reads at once), its reads are
// the daemon's rare requests.
type bareConn struct {
	mu sync.RWMutex // held to use fd, and to close it
	fd int          // -1 once closed
}

// bareWait is a wait in poll(2) without end: an idle holder wakes for
// nothing, and Close ends the wait with shutdown(2).
const bareWait = -1

// takeBare takes c's descriptor out of the poller: a duplicate is kept,
// and c is closed.
func takeBare(c *net.UnixConn) (*bareConn, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	nfd := -1
	var derr error
	if err := rc.Control(func(fd uintptr) { nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	c.Close()
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return nil, err
	}
	return &bareConn{fd: nfd}, nil
}

// use runs f with the descriptor, kept open while it runs.
func (c *bareConn) use(f func(fd int) error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.fd < 0 {
		return net.ErrClosed
	}
	return f(c.fd)
}

// wait waits in poll(2) until fd is ready for events (or shut down).
func wait(fd int, events int16) error {
	_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: events}}, bareWait)
	if err == unix.EINTR {
		return nil
	}
	return err
}

func (c *bareConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n := 0
		again := false
		err := c.use(func(fd int) error {
			var err error
			n, err = rawio.Read(uintptr(fd), p)
			switch {
			case err == unix.EAGAIN:
				again = true
				return wait(fd, unix.POLLIN)
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

func (c *bareConn) Write(p []byte) (int, error) {
	return c.write(p, nil)
}

// write writes all of p, with rights (descriptors to pass) on its first
// byte.
func (c *bareConn) write(p []byte, rights []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		err := c.use(func(fd int) error {
			var n int
			var err error
			if rights != nil {
				n, err = unix.SendmsgN(fd, p, rights, nil, unix.MSG_NOSIGNAL)
			} else {
				n, err = rawio.Write(uintptr(fd), p)
			}
			switch {
			case err == unix.EAGAIN:
				return wait(fd, unix.POLLOUT)
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

// Close ends the connection: a read or write waiting on it returns, and
// the daemon reads the end of the stream.
func (c *bareConn) Close() error {
	c.mu.RLock()
	if c.fd >= 0 {
		unix.Shutdown(c.fd, unix.SHUT_RDWR)
	}
	c.mu.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return os.ErrClosed
	}
	err := unix.Close(c.fd)
	c.fd = -1
	return err
}
