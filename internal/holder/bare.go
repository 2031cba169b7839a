package holder

import (
	"net"

	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/rawio"
)

// takeBare takes the holder's end of a daemon's connection out of the
// runtime's poller: a duplicate is kept, and c is closed. In the poller,
// every read the daemon makes would signal "writable" on it (room freed in
// its send buffer) and wake the holder for nothing, the daemon paying for
// the wake-up inside its read; a thread waiting in poll(2) for input only
// is not woken by those. The holder's writes seldom wait (the daemon reads
// at once), its reads are the daemon's rare requests, and its waits end
// only when the socket is ready or shut down: an idle holder wakes for
// nothing.
func takeBare(c *net.UnixConn) (*rawio.FD, error) {
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
	return rawio.NewFD(nfd, -1), nil
}

// frameConn is the holder's end of a daemon's connection: bare (takeBare),
// and watched by the holder's poller (watched) for a daemon that reads the
// terminal itself.
type frameConn interface {
	Read(p []byte) (int, error)
	Write(p []byte) (int, error)
	WriteRights(p, rights []byte) (int, error)
	Close() error
}
