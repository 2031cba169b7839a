package pane

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/rawio"
)

// master is the daemon's descriptor of a pane's PTY master. One the daemon
// reads (its own PTY, or a holder's that shares its ring) is a file in the
// runtime's poller, which readLoop reads. One whose holder sends the
// output as frames is a bare descriptor kept out of the poller: registered
// here too it would wake the daemon at every frame of output for nothing
// (readiness is the terminal's, shared by both descriptors).
type master struct {
	file *os.File // read here; nil when the holder reads

	mu sync.RWMutex // held to use fd, and to close it
	fd int          // under a holder: the bare descriptor, -1 once closed
}

func fileMaster(f *os.File) *master { return &master{file: f, fd: -1} }

func bareMaster(fd int) *master { return &master{fd: fd} }

// control runs f with the descriptor, kept open while it runs.
func (m *master) control(f func(fd int) error) error {
	if m.file != nil {
		rc, err := m.file.SyscallConn()
		if err != nil {
			return err
		}
		var ferr error
		if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
			return err
		}
		return ferr
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.fd < 0 {
		return os.ErrClosed
	}
	return f(m.fd)
}

// roomWait bounds one wait for the terminal to take more input: Close
// waits for it at most this long.
const roomWait = 100 // milliseconds

// Write writes all of b, waiting while the program does not read.
func (m *master) Write(b []byte) (int, error) {
	if m.file != nil {
		return m.file.Write(b)
	}
	written := 0
	for len(b) > 0 {
		err := m.control(func(fd int) error {
			n, err := rawio.Write(uintptr(fd), b)
			switch {
			case err == unix.EAGAIN:
				// Wait for room outside the poller, in a system call
				// that lets the scheduler go on without this thread.
				_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}, roomWait)
				if err == unix.EINTR {
					return nil
				}
				return err
			case err == unix.EINTR:
				return nil
			case err != nil:
				return err
			}
			written += n
			b = b[n:]
			return nil
		})
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// Close closes the descriptor (once).
func (m *master) Close() error {
	if m.file != nil {
		return m.file.Close()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fd < 0 {
		return os.ErrClosed
	}
	err := unix.Close(m.fd)
	m.fd = -1
	return err
}
