package tmuxctl

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// reqKind is what a command sent on a connection is for.
type reqKind uint8

const (
	reqOther    reqKind = iota // only a failure is logged
	reqList                    // list-panes: the session's panes
	reqSessions                // list-sessions: the server's sessions
	reqCapture                 // capture-pane: a pane's rows
	reqCursor                  // display-message: the cursor after a capture
	reqKeys                    // send-keys: SendKeys waits on done
)

// A request is a command sent on a connection, waiting for its reply.
type request struct {
	kind  reqKind
	pane  string
	seq   uint64 // the pane's capture the reply is for
	group uint64 // the line it was sent on: a failure skips the rest
	// The reply: its lines, and whether it was %error.
	body   [][]byte
	failed bool
	// closed: the connection ended before the reply (failed is set too).
	closed bool
	// done gets the request back when replied; nil: the reply goes to the
	// watcher's loop, in order with the connection's output.
	done chan *request
}

// text is the reply as one string (an error's message).
func (r *request) text() string {
	if r.closed {
		return "the tmux client ended"
	}
	return string(bytes.Join(r.body, []byte("; ")))
}

// writeWait bounds one write of a command; tmux reads its control
// clients' input whatever their output, so a write that waits this long
// means a server that no longer runs.
const writeWait = 5 * time.Second

// exitWait bounds how long a tmux client is given to exit once detached.
const exitWait = 2 * time.Second

// conn is one control client: `tmux -C attach-session -t $ID`, attached
// to one session, whose stdin takes commands and whose stdout streams the
// replies, notifications and output of the session's panes.
//
// NOTE: tmux hands the client's stdin and stdout to the server, which
// reads and writes them itself: the client process only waits.
type conn struct {
	w        *Watcher
	sid      string // the session: "$1"
	cmd      *exec.Cmd
	in       *os.File // commands, one a line
	out      *os.File // read by read only
	batch    []event  // read's own: output events not handed over yet
	gathered int      // read's own: output bytes since the reader last caught up
	stderr   *tail
	exited   chan struct{} // the process is waited for
	readDone chan struct{} // read has returned
	started  time.Time

	mu sync.Mutex // guards the fields that follow; held across a line's write, so that requests are queued in the order their lines are written
	// pending are the commands sent and not yet replied, in order: tmux
	// replies in the order it reads them.
	pending []*request
	lines   uint64 // lines written
	closed  bool   // stdin closed: nothing more is sent

	// The loop's own: touched by the watcher's loop goroutine only.
	attached  bool
	listing   bool            // a list-panes is in flight
	again     bool            // another is wanted once it is replied
	rows      map[string]Pane // the panes of the last list-panes, as this session sees them
	off       map[string]bool // panes owned by another client, paused on this one: tmux sends it none of their output
	exit      string          // %exit's reason
	badLogged bool            // a line that did not parse was logged
}

var errConnClosed = errors.New("the tmux client has ended")

// startConn starts a control client attached to session sid.
func (w *Watcher) startConn(sid string) (*conn, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	// -u: replies as they are whatever the locale; without it tmux writes
	// a command's output with '_' for each byte of a non-ASCII character
	// and for each control character (paneFormat's separators). Pane
	// output is never changed.
	args := append([]string{"-u"}, w.srv.Args()...)
	args = append(args, "-C", "attach-session", "-t", sid,
		// ignore-size: the client has no say in the size of the user's
		// windows. (tmux 3.2 and later also pass over a control client
		// that never sent refresh-client -C, which the watcher never
		// sends; older ones sized windows to a control client's 80x24.)
		"-f", fmt.Sprintf("ignore-size,pause-after=%d", w.pauseAfter))
	cmd := exec.Command(w.tmux, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.Env = env()
	// Its own process group: a signal to corral's terminal is not the
	// client's, and Close can end the client alone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("starting tmux %s control client for session %s: %w", w.srv, sid, err)
	}
	c := &conn{
		w: w, sid: sid, cmd: cmd, in: inW, out: outR, stderr: &tail{},
		exited: make(chan struct{}), readDone: make(chan struct{}), started: time.Now(),
		rows: map[string]Pane{}, off: map[string]bool{},
	}
	go func() {
		c.cmd.Wait()
		close(c.exited)
	}()
	go c.stderr.drain(errR)
	go c.read()
	return c, nil
}

// send writes one command line and queues its requests, one per command
// of the line.
func (c *conn) send(line string, reqs ...*request) error {
	if strings.ContainsAny(line, "\n\r") || line == "" {
		// An empty line detaches the client.
		panic("tmuxctl: a command line with a newline or empty: " + line)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errConnClosed
	}
	c.lines++
	for _, r := range reqs {
		r.group = c.lines
	}
	c.pending = append(c.pending, reqs...)
	c.in.SetWriteDeadline(time.Now().Add(writeWait))
	if _, err := c.in.WriteString(line + "\n"); err != nil {
		// Part of the line may be written: nothing more can be.
		c.pending = c.pending[:len(c.pending)-len(reqs)]
		c.closeLocked()
		return fmt.Errorf("writing to the tmux client of session %s: %w", c.sid, err)
	}
	return nil
}

// call sends one command and waits for its reply, at most wait.
func (c *conn) call(line string, kind reqKind, wait time.Duration) (*request, error) {
	r := &request{kind: kind, done: make(chan *request, 1)}
	if err := c.send(line, r); err != nil {
		return nil, err
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-r.done:
		return r, nil
	case <-t.C:
		return nil, fmt.Errorf("tmux did not answer within %v", wait)
	}
}

// detach ends the client: with its stdin closed, the server detaches it
// and it exits.
func (c *conn) detach() {
	c.mu.Lock()
	c.closeLocked()
	c.mu.Unlock()
}

func (c *conn) closeLocked() {
	if !c.closed {
		c.closed = true
		c.in.Close()
	}
}

func (c *conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// stop detaches the client and waits for its process and its reader,
// killing the process if it does not exit within exitWait.
func (c *conn) stop() {
	c.detach()
	c.reap()
	select {
	case <-c.readDone:
	case <-time.After(time.Second):
		// The server holds the stdout too; a server that hangs would
		// never close it.
		c.out.Close()
		<-c.readDone
	}
}

// reap waits for the process, killing it after exitWait.
func (c *conn) reap() {
	select {
	case <-c.exited:
		return
	case <-time.After(exitWait):
	}
	c.w.logf("tmux %s: the control client of session %s (pid %d) did not exit; killing it", c.w.srv, c.sid, c.cmd.Process.Pid)
	syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	<-c.exited
}

// An event is what a connection's reader hands the watcher's loop, in the
// order read.
type event struct {
	kind evKind
	c    *conn
	pane string   // evOutput, evNotify's pane if any
	data []byte   // evOutput: the bytes, unescaped
	name string   // evNotify: "layout-change"
	args string   // evNotify: the rest of the line
	req  *request // evReply
	ok   bool     // evAttach: the attach succeeded
	// batch: evOutput events read in one go (the reader's own kind).
	batch []event
}

type evKind uint8

const (
	evOutput evKind = iota
	evNotify
	evReply
	evAttach // the attach command's reply
	evGone   // the client has ended and its process is waited for
	evBatch  // output events read together
)

// maxBatch bounds the output events handed over at once.
const maxBatch = 64

// coalesce is how long the reader lets output gather after handing some
// over: a prompt's bytes reach the pane at most this much later.
const coalesce = 10 * time.Millisecond

// floodBytes is the output read in one go past which the reader does not
// wait before reading on.
const floodBytes = 16 << 10

// emit hands the loop an event; after Close, events are dropped.
func (c *conn) emit(ev event) {
	ev.c = c
	c.flush()
	c.send1(ev)
}

// batchOutput keeps an output event to hand over with the others already
// read: the loop is woken once per read of the client's output, not once
// per line (50 spinning panes are 500 lines a second).
func (c *conn) batchOutput(ev event) {
	ev.c = c
	c.batch = append(c.batch, ev)
	c.gathered += len(ev.data)
	if len(c.batch) >= maxBatch {
		c.flush()
	}
}

// flush hands over the output events kept, in order.
func (c *conn) flush() {
	switch len(c.batch) {
	case 0:
		return
	case 1:
		c.send1(c.batch[0])
	default:
		c.send1(event{kind: evBatch, c: c, batch: c.batch})
	}
	c.batch = nil
}

func (c *conn) send1(ev event) {
	select {
	case c.w.events <- ev:
	case <-c.w.quit:
	}
}

// read reads the client's stdout until it ends: it matches replies with
// pending requests and hands the rest to the loop.
func (c *conn) read() {
	defer close(c.readDone)
	lr := newLineReader(c.out)
	ids := map[string]string{} // pane ids, not allocated per line
	var (
		inReply  bool
		guard    []byte
		req      *request // the reply's request; nil: not ours (a hook's)
		body     [][]byte
		attached bool // the attach command's reply is read
	)
	for {
		if lr.r.Buffered() == 0 && len(c.batch) > 0 {
			c.flush() // nothing more without waiting: hand over what was read
			// Let more lines gather before the next read: tmux writes each
			// %output line on its own, and a read per line is a wake-up per
			// line (50 spinning panes: 500 a second). Not in a flood: a
			// read that brought much is followed at once.
			if c.gathered < floodBytes {
				time.Sleep(coalesce)
			}
			c.gathered = 0
		}
		b, err := lr.next()
		if errors.Is(err, errLong) {
			c.w.malformed.Add(1)
			c.w.logf("tmux %s: session %s: %v", c.w.srv, c.sid, err)
			continue
		}
		if err != nil {
			break
		}
		if inReply {
			end, failed := closes(b, guard)
			if !end {
				if req != nil || !attached {
					body = append(body, bytes.Clone(b))
				}
				continue
			}
			inReply = false
			switch {
			case req != nil:
				c.replied(req, body, failed)
			case !attached:
				// The first reply not ours is the attach command's.
				attached = true
				ev := event{kind: evAttach, ok: !failed}
				if failed {
					ev.args = string(bytes.Join(body, []byte("; ")))
				}
				c.emit(ev)
			}
			body = nil
			continue
		}
		l := parseLine(b)
		switch l.kind {
		case kindOutput:
			id, ok := ids[string(l.pane)]
			if !ok {
				id = string(l.pane)
				ids[id] = id
			}
			data, bad := unescape(make([]byte, 0, len(l.value)), l.value)
			if bad > 0 {
				c.w.malformed.Add(int64(bad))
			}
			c.batchOutput(event{kind: evOutput, pane: id, data: data})
		case kindBegin:
			inReply, guard, body, req = true, append(guard[:0], l.guard...), nil, nil
			if l.control {
				c.mu.Lock()
				if len(c.pending) > 0 {
					req = c.pending[0]
					c.pending = c.pending[1:]
				}
				c.mu.Unlock()
				if req == nil {
					c.w.malformed.Add(1) // a reply nobody asked for; skipped
				}
			}
		case kindNotify:
			c.emit(event{kind: evNotify, name: string(l.name), args: string(l.value)})
		default: // kindBad, and %end or %error outside a reply
			c.w.malformed.Add(1)
		}
	}
	c.flush()
	c.out.Close()
	c.end()
}

// replied completes a request. A failed command skips the rest of its
// line: tmux runs none of them, and no reply comes for them.
func (c *conn) replied(r *request, body [][]byte, failed bool) {
	r.body, r.failed = body, failed
	var skipped []*request
	if failed {
		c.mu.Lock()
		for len(c.pending) > 0 && c.pending[0].group == r.group {
			s := c.pending[0]
			s.failed = true
			s.body = [][]byte{[]byte("not run: an earlier command of its line failed")}
			skipped = append(skipped, s)
			c.pending = c.pending[1:]
		}
		c.mu.Unlock()
	}
	c.deliver(r)
	for _, s := range skipped {
		c.deliver(s)
	}
}

func (c *conn) deliver(r *request) {
	if r.done != nil {
		r.done <- r // buffered: the caller may have stopped waiting
		return
	}
	c.emit(event{kind: evReply, req: r})
}

// end follows the end of the client's stdout: the requests still pending
// fail, the process is waited for, and the loop is told.
func (c *conn) end() {
	c.mu.Lock()
	c.closeLocked()
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, r := range pending {
		r.failed, r.closed = true, true
		c.deliver(r)
	}
	c.reap()
	c.emit(event{kind: evGone})
}

// tail keeps the end of a client's stderr, for the log.
type tail struct {
	mu  sync.Mutex // guards buf
	buf []byte
}

func (t *tail) drain(f *os.File) {
	defer f.Close()
	b := make([]byte, 1024)
	for {
		n, err := f.Read(b)
		t.mu.Lock()
		t.buf = append(t.buf, b[:n]...)
		if len(t.buf) > 1024 {
			t.buf = append(t.buf[:0], t.buf[len(t.buf)-1024:]...)
		}
		t.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
