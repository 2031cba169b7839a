// Package handover passes a daemon's lock and listening socket from the
// old daemon to the new one (serve --replace): the lock is never free and
// the socket never missing, so a command run meanwhile waits in the
// socket's queue for the new daemon instead of starting a daemon of its
// own. The panes themselves go by the pane table (internal/panestore):
// the old daemon lets go of them and the new one adopts them.
package handover

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
	if err := SamePeer(c); err != nil {
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

// SamePeer refuses a peer of another user than this process's.
func SamePeer(c *net.UnixConn) error {
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

// Send passes lock and ln (the listening socket's file) to the new daemon
// listening on to, a process of this user. Nothing is passed when it
// fails: the old daemon then lets go of both as at a shutdown.
func Send(to string, lock, ln *os.File) error {
	c, err := net.DialTimeout("unix", to, 2*time.Second)
	if err != nil {
		return fmt.Errorf("hand-over: %w", err)
	}
	defer c.Close()
	uc := c.(*net.UnixConn)
	if err := SamePeer(uc); err != nil {
		return err
	}
	_ = uc.SetDeadline(time.Now().Add(2 * time.Second))
	rights := unix.UnixRights(int(lock.Fd()), int(ln.Fd()))
	if _, _, err := uc.WriteMsgUnix([]byte("corral"), rights, nil); err != nil {
		return fmt.Errorf("hand-over: %w", err)
	}
	return nil
}
