// Package holder keeps panes' programs alive across daemons: a small
// process (the corral binary's hidden "hold" command, up to GroupSize
// panes each; see Pool) owns each pane's PTY master, is the child
// subreaper of the panes' processes, keeps a bounded ring of each pane's
// recent output, and serves one daemon at a time on each pane's private
// unix socket. The daemon gets a duplicate of the PTY master and
// the ring (a memfd both map): it reads the program's output, appending
// to the ring (and, now and then, a checkpoint that redraws its screen and
// history: the ring's memory before it is released, see Ring.Checkpoint),
// writes input and does the terminal's ioctls itself. The
// holder reads the terminal only while no daemon does (and for a daemon
// of an older build, which did not ask for the ring, it sends the output
// on as frames).
//
// The wire protocol: every frame is a type byte, a 4-byte big-endian
// length and that many bytes of payload, at most MaxFrame. A connection
// opens with a mutual proof of the pane's secret (HMAC-SHA256 over the
// other side's nonce), both sides checking the peer's uid (SO_PEERCRED)
// first; only then does the holder pass the PTY master and the ring
// (SCM_RIGHTS), replay its ring as frames to a daemon that did not ask
// for it, and go live. A connection may instead open with an end request
// (EndStray), checked for the uid only: it ends a pane no daemon holds.
package holder

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/corral-dev/corral/internal/osproc"
)

// Version of the wire protocol; both sides refuse another.
const Version = 1

// MaxFrame bounds a frame's payload.
const MaxFrame = 1 << 20

// Frame types.
const (
	// daemon → holder
	tHello = 'H' // hello{version, nonce}
	tAuth  = 'A' // auth{proof}
	tKill  = 'K' // kill{signal}
	tDone  = 'C' // the daemon has the exit status: the holder may go
	tEnd   = 'Z' // instead of a hello: end this pane (see EndStray)
	// holder → daemon
	tChallenge = 'h' // challenge{version, proof, nonce}
	tWelcome   = 'W' // welcome{…}, with the PTY master attached
	tOutput    = 'O' // program output (ring replay first, then live)
	tLive      = 'L' // the ring replay is over
	tExit      = 'X' // exit{code}: after the last output
	tError     = 'E' // a refusal, as text
	tEnded     = 'z' // the pane is being ended (the answer to tEnd)
)

// ErrFrame wraps every malformed frame.
var ErrFrame = errors.New("bad holder frame")

func writeFrame(w io.Writer, typ byte, payload []byte) error {
	if len(payload) > MaxFrame {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrFrame, len(payload), MaxFrame)
	}
	_, err := w.Write(appendFrame(make([]byte, 0, 5+len(payload)), typ, payload))
	return err
}

// appendFrame appends a frame to b.
func appendFrame(b []byte, typ byte, payload []byte) []byte {
	b = append(b, typ, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(b[len(b)-4:], uint32(len(payload)))
	return append(b, payload...)
}

func writeJSON(w io.Writer, typ byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFrame(w, typ, b)
}

// readFrame reads one frame into buf (grown as needed) and returns its
// type and payload, refusing a payload over MaxFrame before reading it.
func readFrame(r io.Reader, buf []byte) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("%w: type %q of %d bytes, the limit is %d", ErrFrame, h[0], n, MaxFrame)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return h[0], buf, nil
}

func readJSON(r io.Reader, want byte, v any) error {
	typ, b, err := readFrame(r, nil)
	if err != nil {
		return err
	}
	return decodeFrame(typ, b, want, v)
}

// decodeFrame decodes a frame of type want into v.
func decodeFrame(typ byte, b []byte, want byte, v any) error {
	if typ == tError && want != tError {
		return fmt.Errorf("refused: %s", clip(string(b)))
	}
	if typ != want {
		return fmt.Errorf("%w: got type %q, want %q", ErrFrame, typ, want)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %v", ErrFrame, err)
	}
	return nil
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// endMsg is an end request's payload (none: end the pane).
type endMsg struct {
	// OnlyExited: end it only if its program has exited.
	OnlyExited bool `json:"only_exited,omitempty"`
}

// errStillRuns is the holder's refusal of an end request made only for a
// program that has exited.
const errStillRuns = "its program still runs"

type hello struct {
	Version int    `json:"version"`
	Nonce   string `json:"nonce"`
	// Shared asks to read the terminal itself, into the ring the holder
	// shares (holders that predate it ignore it and send the output).
	Shared bool `json:"shared,omitempty"`
}

type challenge struct {
	Version int    `json:"version"`
	Proof   string `json:"proof"`
	Nonce   string `json:"nonce"`
}

type auth struct {
	Proof string `json:"proof"`
}

// Welcome is what a holder says of its pane once both sides are proven.
type Welcome struct {
	HolderPID  int `json:"holder_pid"`
	ProgramPID int `json:"program_pid"`
	// ProgramStart is the program's start time (procs.Group.Start); 0
	// from a holder that did not say (older).
	ProgramStart uint64 `json:"program_start,omitempty"`
	Exited       bool   `json:"exited"`
	ExitCode     int    `json:"exit_code"`
	// Ring is how many bytes of output the replay carries.
	Ring int `json:"ring"`
	// Shared: the daemon reads the terminal itself; the ring's memfd
	// comes with the PTY master, and no output comes as frames.
	Shared bool `json:"shared,omitempty"`
}

type killMsg struct {
	Signal int `json:"signal"`
}

type exitMsg struct {
	Code int `json:"code"`
}

// NewSecret returns a pane's random secret.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// proof is what side ("holder" or "daemon") answers to the other's nonce.
func proof(secret, side, nonce string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(side + "\x00" + nonce))
	return hex.EncodeToString(m.Sum(nil))
}

func checkProof(secret, side, nonce, got string) bool {
	return hmac.Equal([]byte(proof(secret, side, nonce)), []byte(got))
}

// peerCred returns the uid and pid of the process at the other end.
func peerCred(c *net.UnixConn) (uid, pid int, err error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cerr error
	if err := rc.Control(func(fd uintptr) { uid, pid, cerr = osproc.PeerCred(int(fd)) }); err != nil {
		return 0, 0, err
	}
	return uid, pid, cerr
}

// wantUID is the uid a peer must have: ours. A variable for tests.
var wantUID = os.Getuid

func checkPeer(c *net.UnixConn) (int, error) {
	uid, pid, err := peerCred(c)
	if err != nil {
		return 0, fmt.Errorf("cannot tell who is at the other end of the socket: %w", err)
	}
	if uid != wantUID() {
		return pid, fmt.Errorf("the process at the other end (pid %d) runs as uid %d, not %d", pid, uid, wantUID())
	}
	return pid, nil
}
