package holder

// A daemon's connection to a pane: the proofs, the hand-over of the
// terminal and the ring, the daemon's requests, and frames to it.

import (
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/rawio"
)

// handshakeWait bounds a connection's proofs.
const handshakeWait = 5 * time.Second

// sconn is the daemon's connection; wmu orders its frames.
type sconn struct {
	c frameConn // out of the poller (takeBare) when the holder sends the output
	// shared: the daemon reads the terminal itself, into the shared
	// ring; no output goes over the connection.
	shared bool
	wmu    sync.Mutex
	buf    []byte // a frame being written; guarded by wmu

	// The requests of a connection the poller watches (watchRequests).
	in    []byte     // read, not yet a whole frame; the poller's only
	qmu   sync.Mutex // guards what follows
	queue []request
	busy  bool // a goroutine takes the queue
	over  bool // no request is taken any more (done)
}

// serve proves the daemon, hands it the terminal and the ring, and takes
// its requests until it goes.
func (h *holder) serve(c *net.UnixConn) {
	hi, ok := h.handshake(c)
	if !ok {
		return
	}
	sc, ok := h.takeConn(c, hi)
	if !ok {
		return
	}
	if !h.attach(sc) {
		return
	}
	h.firstOnce.Do(func() { close(h.first) })
	if w, ok := sc.c.(*watched); ok {
		h.watchRequests(sc, w)
		return
	}
	h.takeRequests(sc)
}

// refuse tells a connection why it is refused, and closes it.
func (h *holder) refuse(c *net.UnixConn, err error) {
	h.logf("refused a connection: %v", err)
	_ = writeFrame(c, tError, []byte(err.Error()))
	c.Close()
}

// handshake checks the peer and proves the daemon both ways: its hello,
// the holder's challenge, its proof of the pane's secret. A connection
// that opens with an end request instead is handled as one (endStray).
// ok is false when the connection is done with (refused or closed).
func (h *holder) handshake(c *net.UnixConn) (hi hello, ok bool) {
	_ = c.SetDeadline(time.Now().Add(handshakeWait))
	if _, err := checkPeer(c); err != nil {
		h.refuse(c, err)
		return hi, false
	}
	typ, b, err := readFrame(c, nil)
	if errors.Is(err, io.EOF) {
		c.Close() // a look at who listens (Listener), not a refused daemon
		return hi, false
	}
	if err != nil {
		h.refuse(c, err)
		return hi, false
	}
	if typ == tEnd {
		var m endMsg
		if len(b) > 0 && json.Unmarshal(b, &m) != nil {
			h.refuse(c, fmt.Errorf("%w: an end request that is not one", ErrFrame))
			return hi, false
		}
		h.endStray(c, m)
		return hi, false
	}
	if err := decodeFrame(typ, b, tHello, &hi); err != nil {
		h.refuse(c, err)
		return hi, false
	}
	if hi.Version != Version {
		h.refuse(c, fmt.Errorf("protocol version %d; this holder speaks %d", hi.Version, Version))
		return hi, false
	}
	nonce := newNonce()
	if err := writeJSON(c, tChallenge, challenge{Version: Version, Proof: proof(h.cfg.Secret, "holder", hi.Nonce), Nonce: nonce}); err != nil {
		c.Close()
		return hi, false
	}
	var a auth
	if err := readJSON(c, tAuth, &a); err != nil {
		h.refuse(c, err)
		return hi, false
	}
	if subtle.ConstantTimeCompare([]byte(a.Proof), []byte(proof(h.cfg.Secret, "daemon", nonce))) != 1 {
		h.refuse(c, errors.New("wrong secret: this pane belongs to another daemon"))
		return hi, false
	}
	return hi, true
}

// takeConn makes the proven connection the daemon's: in the poller for a
// daemon that reads the terminal itself, out of it (takeBare) for one the
// holder sends the output. ok is false when it was refused.
func (h *holder) takeConn(c *net.UnixConn, hi hello) (sc *sconn, ok bool) {
	// A daemon that asks reads the terminal itself, into the shared ring;
	// one that does not (an older build) gets the output from the holder.
	shared := hi.Shared && h.ringFD >= 0
	var bc frameConn
	var err error
	if bc, err = takeBare(c); err != nil {
		h.refuse(c, err)
		return nil, false
	}
	if shared {
		// Frames are rare both ways (requests; the exit): watched by the
		// holder's poller, the connection costs no goroutine while it
		// waits.
		fd := bc.(*rawio.FD)
		var w *watched
		if err := fd.Use(func(n int) error { var err error; w, err = newWatched(n); return err }); err != nil {
			fd.Close()
			h.logf("refused a connection: %v", err)
			return nil, false
		}
		bc = w
	}
	sc = &sconn{c: bc, shared: shared}
	if !sc.shared {
		// The program has ended and the holder is reading the end of its
		// output: that end goes before the exit, in the replay.
		h.mu.Lock()
		rd, exited := h.reader, h.exited
		h.mu.Unlock()
		if rd != nil && exited {
			select {
			case <-rd.done:
			case <-time.After(DrainWait):
			}
		}
	}
	return sc, true
}

// attach makes sc the pane's connection, in place of an older one, and
// sends the welcome with the terminal (and the ring), the replay of the
// ring to a daemon that does not read it itself, and the exit if the
// program has ended. It is false when the connection is done with (the
// pane has ended, or a write failed).
func (h *holder) attach(sc *sconn) bool {
	bc := sc.c
	sc.wmu.Lock()
	h.mu.Lock()
	if h.released || h.stray {
		h.mu.Unlock()
		sc.wmu.Unlock()
		_ = writeFrame(bc, tError, []byte("the pane has ended"))
		bc.Close()
		return false
	}
	old := h.conn
	h.conn = sc
	var replay []byte
	var rd *reader
	if sc.shared {
		rd, h.reader = h.reader, nil
	} else {
		replay = h.ring.Bytes()
		h.startReadingLocked() // what it reads from now on goes live, after the replay
	}
	exited, code := h.exited, h.code
	h.mu.Unlock()
	if old != nil {
		old.c.Close() // a newer daemon takes over
	}
	fds := []int{h.pty}
	w := Welcome{HolderPID: os.Getpid(), ProgramPID: h.pid, ProgramStart: h.group.Start, Exited: exited, ExitCode: code, Ring: len(replay)}
	if sc.shared {
		if rd != nil {
			rd.end() // every byte it read is in the ring before the daemon reads on
		}
		fds = append(fds, h.ringFD)
		w.Shared = true
	}
	err := h.welcome(bc, w, fds)
	for len(replay) > 0 && err == nil {
		n := min(len(replay), 64<<10)
		err = writeFrame(bc, tOutput, replay[:n])
		replay = replay[n:]
	}
	if err == nil {
		err = writeFrame(bc, tLive, nil)
	}
	if err == nil && exited {
		b, _ := json.Marshal(exitMsg{Code: code})
		err = writeFrame(bc, tExit, b)
	}
	sc.wmu.Unlock()
	if err != nil {
		h.drop(sc)
		return false
	}
	return true
}

// takeRequests takes the requests of a daemon the holder sends the
// output to (an older build) until it goes.
func (h *holder) takeRequests(sc *sconn) {
	bc := sc.c
	buf := make([]byte, 256)
	for {
		typ, b, err := readFrame(bc, buf)
		if err != nil {
			h.connEnded(sc, err)
			return
		}
		if h.request(sc, typ, b) {
			return
		}
	}
}

// request acts on one request of the daemon's: a signal for the pane's
// processes, or done, once it has the exit status. It is true when no
// more requests are to be taken.
func (h *holder) request(sc *sconn, typ byte, b []byte) (over bool) {
	switch typ {
	case tKill:
		var k killMsg
		if json.Unmarshal(b, &k) == nil && k.Signal > 0 && k.Signal < 65 {
			h.kill(syscall.Signal(k.Signal))
		}
	case tDone:
		h.mu.Lock()
		done := h.exited && h.conn == sc
		h.mu.Unlock()
		if done {
			h.finishPane()
			return true
		}
	default:
		h.logf("daemon connection: unknown frame type %q skipped", typ)
	}
	return false
}

// connEnded drops a daemon's connection that ended or failed.
func (h *holder) connEnded(sc *sconn, err error) {
	if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) && !errors.Is(err, net.ErrClosed) {
		h.logf("daemon connection: %v", err)
	}
	h.drop(sc)
}

// endStray ends a pane on the word of a process of this user (checked by
// serve) that does not know its secret: a daemon that finds a holder
// socket its pane table does not name (the daemon that started the pane
// ended before noting it, so no daemon can adopt it). Ending needs no
// secret — the user can kill the processes anyway — but a pane a daemon
// holds is not ended this way.
func (h *holder) endStray(c *net.UnixConn, m endMsg) {
	defer c.Close()
	h.mu.Lock()
	held, runs := h.conn != nil, !h.waited
	if !held && !(m.OnlyExited && runs) {
		h.stray = true
	}
	h.mu.Unlock()
	switch {
	case held:
		_ = writeFrame(c, tError, []byte("a daemon holds this pane; end it through that daemon"))
		return
	case m.OnlyExited && runs:
		_ = writeFrame(c, tError, []byte(errStillRuns))
		return
	}
	h.logf("ended on request: no daemon can adopt it")
	_ = writeFrame(c, tEnded, nil)
	go h.end()
}

// welcome sends the welcome frame with fds attached: the PTY master, and
// the ring's memfd for a daemon that reads the terminal itself.
func (h *holder) welcome(c frameConn, w Welcome, fds []int) error {
	b, _ := json.Marshal(w)
	frame := make([]byte, 5+len(b))
	frame[0] = tWelcome
	binary.BigEndian.PutUint32(frame[1:5], uint32(len(b)))
	copy(frame[5:], b)
	_, err := c.WriteRights(frame, unix.UnixRights(fds...))
	return err
}

// send writes one frame to the daemon; a connection that fails is dropped
// (the next daemon gets the ring).
func (h *holder) send(sc *sconn, typ byte, b []byte) {
	sc.wmu.Lock()
	sc.buf = appendFrame(sc.buf[:0], typ, b)
	_, err := sc.c.Write(sc.buf)
	if cap(sc.buf) > 64<<10 {
		sc.buf = nil // a big frame's buffer is not kept
	}
	sc.wmu.Unlock()
	if err != nil {
		h.drop(sc)
	}
}

// drop ends a daemon's connection. If it read the terminal itself, it no
// longer does (it let go, or it is gone): the holder reads on.
func (h *holder) drop(sc *sconn) {
	h.mu.Lock()
	if h.conn == sc {
		h.conn = nil
		if sc.shared {
			h.startReadingLocked()
		}
	}
	h.mu.Unlock()
	sc.c.Close()
}
