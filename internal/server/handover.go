package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/osproc"
	"golang.org/x/sys/unix"
)

// The hand-over of serve --replace passes the daemon's lock and listening
// socket from the old daemon to the new one: the lock is never free and
// the socket never missing, so a command run meanwhile waits in the
// socket's queue for the new daemon instead of starting a daemon of its own.

// Inherited is what a new daemon takes over from the old one.
type Inherited struct {
	Lock     *os.File
	Listener net.Listener
}

// Receiver waits for the old daemon's lock and socket.
type Receiver struct {
	ln   *net.UnixListener
	path string
}

// NewReceiver listens, in the state folder, for the old daemon.
func NewReceiver(stateDir string) (*Receiver, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("hand-over: %w", err)
	}
	path := filepath.Join(stateDir, "handover-"+strconv.Itoa(os.Getpid())+".sock")
	_ = os.Remove(path)
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("hand-over: %w", err)
	}
	return &Receiver{ln: ln, path: path}, nil
}

// Path is where the old daemon sends them.
func (r *Receiver) Path() string { return r.path }

// Close stops listening.
func (r *Receiver) Close() { _ = r.ln.Close() }

// Receive waits (at most wait) for the old daemon's lock and listening
// socket, from a process of this user.
func (r *Receiver) Receive(wait time.Duration) (*Inherited, error) {
	_ = r.ln.SetDeadline(time.Now().Add(wait))
	c, err := r.ln.AcceptUnix()
	if err != nil {
		return nil, fmt.Errorf("the old daemon did not pass its socket on: %w", err)
	}
	defer c.Close()
	if err := samePeer(c); err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(wait))
	buf, oob := make([]byte, 16), make([]byte, unix.CmsgSpace(2*4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("hand-over: %w", err)
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if got, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, got...)
			}
		}
	}
	if string(buf[:n]) != "corral" || len(fds) != 2 {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
		return nil, errors.New("hand-over: the old daemon sent something else than its lock and socket")
	}
	lock := os.NewFile(uintptr(fds[0]), "daemon lock")
	lf := os.NewFile(uintptr(fds[1]), "daemon socket")
	ln, err := net.FileListener(lf)
	lf.Close()
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("hand-over: the old daemon's socket: %w", err)
	}
	// The lock came with the open file it is held on: taking it again
	// through the same file succeeds, and proves it.
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		ln.Close()
		return nil, fmt.Errorf("hand-over: the old daemon's lock is not held: %w", err)
	}
	return &Inherited{Lock: lock, Listener: ln}, nil
}

func samePeer(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var uid int
	var cerr error
	if err := raw.Control(func(fd uintptr) { uid, _, cerr = osproc.PeerCred(int(fd)) }); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("hand-over: who sent it: %w", cerr)
	}
	if uid != os.Getuid() {
		return fmt.Errorf("hand-over: refused a process of uid %d", uid)
	}
	return nil
}

// prepareHandover keeps a copy of the listening socket for passOn, and
// keeps its file when the listener is closed.
func (s *Server) prepareHandover(to string) error {
	ul, ok := s.ln.(*net.UnixListener)
	if !ok {
		return errors.New("the daemon's listener is not a unix socket")
	}
	f, err := ul.File()
	if err != nil {
		return err
	}
	ul.SetUnlinkOnClose(false)
	s.handoverTo, s.handoverLn = to, f
	return nil
}

// passOn sends the lock and the listening socket to the new daemon. It
// reports whether they went: otherwise the daemon lets go of them as at a
// shutdown, and the new one takes them the ordinary way.
func (s *Server) passOn() bool {
	if s.handoverTo == "" || s.handoverLn == nil {
		return false
	}
	defer s.handoverLn.Close()
	c, err := net.DialTimeout("unix", s.handoverTo, 2*time.Second)
	if err != nil {
		s.opts.Logf("hand-over: %v; the socket is let go of instead", err)
		return false
	}
	defer c.Close()
	uc := c.(*net.UnixConn)
	if err := samePeer(uc); err != nil {
		s.opts.Logf("%v", err)
		return false
	}
	_ = uc.SetDeadline(time.Now().Add(2 * time.Second))
	rights := unix.UnixRights(int(s.lock.Fd()), int(s.handoverLn.Fd()))
	if _, _, err := uc.WriteMsgUnix([]byte("corral"), rights, nil); err != nil {
		s.opts.Logf("hand-over: %v; the socket is let go of instead", err)
		return false
	}
	s.opts.Logf("handed the lock and the socket over")
	return true
}
