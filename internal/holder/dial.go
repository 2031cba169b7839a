package holder

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Conn is a daemon's connection to one holder.
type Conn struct {
	c  *net.UnixConn
	rc syscall.RawConn // c's, for the reads of Run
	in inbox
	w  atomic.Pointer[connWatch] // set by Watch
	// pty is the daemon's duplicate of the PTY master (non-blocking,
	// close-on-exec, -1 once taken; see TakePTY).
	pty int
	// Ring is the holder's shared ring when the daemon reads the terminal
	// itself (Welcome.Shared): append what is read to it. Nil otherwise:
	// the output comes through Run.
	Ring *Ring
	// Welcome is what the holder said of its pane.
	Welcome Welcome
	wmu     sync.Mutex

	closeOnce sync.Once
	closeErr  error
}

// Msg is one thing a holder says after the welcome.
type Msg struct {
	Output []byte // program output, valid until the next call of Next
	Live   bool   // the ring replay is over
	Exit   bool   // the program and every process of the pane have ended
	Code   int    // its exit status, with Exit
}

// Dial connects to the holder at socket and proves both sides with
// secret: the holder must run as our uid and know the secret before it
// gets ours, and it hands over the PTY master only to a daemon that knows
// it too. Nothing waits longer than timeout.
func Dial(socket, secret string, timeout time.Duration) (*Conn, error) {
	return dial(socket, secret, timeout, true)
}

// DialStream is Dial for a daemon that takes the output as frames from
// the holder, as daemons did before the shared ring (kept for them, and
// tested through this).
func DialStream(socket, secret string, timeout time.Duration) (*Conn, error) {
	return dial(socket, secret, timeout, false)
}

func dial(socket, secret string, timeout time.Duration, shared bool) (*Conn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.Dial("unix", socket)
	if err != nil {
		return nil, err
	}
	c := nc.(*net.UnixConn)
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := checkPeer(c); err != nil {
		return nil, err
	}
	nonce := newNonce()
	if err := writeJSON(c, tHello, hello{Version: Version, Nonce: nonce, Shared: shared}); err != nil {
		return nil, err
	}
	var ch challenge
	if err := readJSON(c, tChallenge, &ch); err != nil {
		return nil, err
	}
	if ch.Version != Version {
		return nil, fmt.Errorf("the holder speaks protocol version %d; this daemon speaks %d", ch.Version, Version)
	}
	if !checkProof(secret, "holder", nonce, ch.Proof) {
		return nil, errors.New("the socket does not know the pane's secret: it is not this pane's holder")
	}
	if err := writeJSON(c, tAuth, auth{Proof: proof(secret, "daemon", ch.Nonce)}); err != nil {
		return nil, err
	}
	pty, ringFD, w, err := readWelcome(c)
	if err != nil {
		return nil, err
	}
	var ring *Ring
	if ringFD >= 0 {
		ring, err = MapRing(ringFD)
		unix.Close(ringFD)
		if err != nil {
			unix.Close(pty)
			return nil, err
		}
	}
	_ = c.SetDeadline(time.Time{})
	rc, err := c.SyscallConn()
	if err != nil {
		unix.Close(pty)
		if ring != nil {
			ring.Close()
		}
		return nil, err
	}
	ok = true
	return &Conn{c: c, rc: rc, pty: pty, Ring: ring, Welcome: w}, nil
}

// readWelcome reads the welcome frame and the descriptors that come with
// it: the PTY master (close-on-exec, non-blocking) and, when the welcome
// says Shared, the ring's memfd (else -1). Any other descriptor is closed.
func readWelcome(c *net.UnixConn) (pty, ring int, w Welcome, err error) {
	pty, ring = -1, -1
	fail := func(err error) (int, int, Welcome, error) {
		if pty >= 0 {
			unix.Close(pty)
		}
		if ring >= 0 {
			unix.Close(ring)
		}
		return -1, -1, w, err
	}
	var h [5]byte
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := c.ReadMsgUnix(h[:], oob)
	if err != nil {
		return fail(err)
	}
	var fds []int
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err == nil {
			for _, m := range msgs {
				if got, err := unix.ParseUnixRights(&m); err == nil {
					fds = append(fds, got...)
				}
			}
		}
	}
	for i, fd := range fds {
		switch i {
		case 0:
			unix.CloseOnExec(fd)
			pty = fd
		case 1:
			unix.CloseOnExec(fd)
			ring = fd
		default:
			unix.Close(fd)
		}
	}
	if n < len(h) {
		if _, err := io.ReadFull(c, h[n:]); err != nil {
			return fail(err)
		}
	}
	size := binary.BigEndian.Uint32(h[1:])
	if size > MaxFrame {
		return fail(fmt.Errorf("%w: welcome of %d bytes", ErrFrame, size))
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(c, b); err != nil {
		return fail(err)
	}
	if h[0] == tError {
		return fail(fmt.Errorf("refused: %s", clip(string(b))))
	}
	if h[0] != tWelcome {
		return fail(fmt.Errorf("%w: got type %q, want the welcome", ErrFrame, h[0]))
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return fail(fmt.Errorf("%w: welcome: %v", ErrFrame, err))
	}
	if pty < 0 {
		return fail(errors.New("the holder sent no terminal with its welcome"))
	}
	if w.Shared != (ring >= 0) {
		return fail(errors.New("the holder's welcome and the descriptors that came with it disagree on the shared ring"))
	}
	// The holder's reads need it non-blocking (the flag is the terminal's,
	// shared by both descriptors): never call anything here that clears it.
	if err := unix.SetNonblock(pty, true); err != nil {
		return fail(err)
	}
	return pty, ring, w, nil
}

// Kill asks the holder to signal every process of the pane.
func (c *Conn) Kill(sig syscall.Signal) error {
	b, _ := json.Marshal(killMsg{Signal: int(sig)})
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return writeFrame(c.c, tKill, b)
}

// Collect tells the holder its exit status was taken: it may go.
func (c *Conn) Collect() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return writeFrame(c.c, tDone, nil)
}

// TakePTY hands the caller the daemon's descriptor of the PTY master,
// which it then closes, once; Close no longer does. It is a bare
// descriptor: wrapping it in an *os.File puts it in the runtime's poller,
// right when the daemon reads it (Ring set) and wrong when the holder does
// (every frame of output would wake the daemon for nothing: readiness is
// the terminal's, shared by both descriptors). -1 if taken already.
func (c *Conn) TakePTY() int {
	fd := c.pty
	c.pty = -1
	return fd
}

// Close leaves the holder running (for the next daemon). A daemon that
// read the terminal itself must have stopped before: the holder reads on
// from here.
// Close is safe to call more than once, from any goroutine.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.unwatch()
		if c.Ring != nil {
			c.Ring.Close() // unmapped: not to be used after Close
		}
		if c.pty >= 0 {
			unix.Close(c.pty)
			c.pty = -1
		}
		c.closeErr = c.c.Close()
	})
	return c.closeErr
}

// SetDeadline bounds the reads and writes of the connection (zero: none).
func (c *Conn) SetDeadline(t time.Time) { _ = c.c.SetDeadline(t) }

// Listener says which process listens on socket, without proving anything
// to it (the holder logs a refused connection): one of this user's, or an
// error. A socket nobody listens on gives syscall.ECONNREFUSED.
func Listener(socket string, wait time.Duration) (pid int, err error) {
	c, err := net.DialTimeout("unix", socket, wait)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return checkPeer(c.(*net.UnixConn))
}
