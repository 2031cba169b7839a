// Package tmuxctl watches the panes of a tmux server through tmux's
// control mode: one `tmux -C` client attached to each session streams
// the output of the session's panes, answers the commands that list and
// capture them, and takes the keys sent to them. Nothing goes through a
// tmux process per command; the only other process is one list-sessions
// when the server is found.
//
// The files: watch.go the API; loop.go the goroutine that owns the
// clients and panes and calls the Handler; panes.go the panes' listing,
// ownership and capture; conn.go one control client; proto.go the
// protocol's lines; screen.go a capture drawn as terminal output;
// server.go the server's socket, the tmux binary and list-sessions.
//
// NOTE: the watcher avoids what crashes tmux servers before 3.7:
// subscriptions (refresh-client -B) and refresh-client -A %N:off. One
// crash it cannot avoid: respawn-pane -k of a pane whose output is queued
// for a control client (tmux commit 4714f478f).
package tmuxctl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Pane is one tmux pane as the server reports it.
type Pane struct {
	ID         string // "%3", unique in the server for its life (a server started again counts from %0 again)
	SessionID  string // "$1"
	Session    string // session name
	Window     int    // window index
	Index      int    // pane index
	Target     string // "SESSION:WINDOW.PANE"
	Cols, Rows int
	PID        int    // pane_pid
	Command    string // pane_current_command
	Path       string // pane_current_path
	TTY        string // pane_tty
}

// Handler receives what the watched server does. Calls for one pane are
// made in order, and all calls from one goroutine at a time; a Handler
// must not block long (the output of other panes waits behind it, and
// tmux pauses a pane whose output waits longer than Options.PauseAfter).
// A Handler may keep the slices it is given. It must not call Close (which
// waits for the Handler) nor SendKeys (whose reply waits behind it).
type Handler interface {
	// Added: a pane is seen for the first time (at start, or created
	// later). screen draws the pane's current contents on a blank
	// terminal of its size; Output follows with nothing lost between the
	// capture and the stream.
	Added(p Pane, screen []byte)
	// Output: bytes the pane's program wrote, exactly as written.
	Output(id string, b []byte)
	// Changed: the pane's size, target, command or path changed.
	Changed(p Pane)
	// Redraw: output was lost (the pane was paused because the client fell
	// behind, or it moved to another client); screen is a fresh capture,
	// as for Added.
	Redraw(id string, screen []byte)
	// Closed: the pane is gone (killed, its program exited, its window or
	// session closed, or the server exited).
	Closed(id string)
}

// Options tune a Watcher; the zero value is the default.
type Options struct {
	// PauseAfter is the pause-after client flag in seconds (0: 5): output
	// of a pane that waits longer than this for the Handler is dropped by
	// tmux and the pane redrawn.
	PauseAfter int
	// Retry is how often a server that is not running is looked for again
	// (0: 1s). Looking is a dial of its socket, never a process.
	Retry time.Duration
	// Log receives one line per noteworthy event (nil: none).
	Log func(format string, args ...any)
}

// Status is a Watcher's state.
type Status struct {
	Server    Server
	Running   bool      // a server answers
	Since     time.Time // when Running last changed
	Sessions  int       // control clients attached
	Panes     int
	Malformed int64  // lines that did not parse, skipped and counted
	Pauses    int64  // times a pane was paused and redrawn
	Version   string // tmux -V of the binary used, e.g. "3.3a"
	Err       string // the last error (why not running, if known)
}

// Watcher watches one tmux server.
type Watcher struct {
	srv        Server
	h          Handler
	tmux       string // the binary
	sock       string
	pauseAfter int
	retry      time.Duration
	logf       func(string, ...any)

	events   chan event
	quit     chan struct{} // closed by Close
	loopDone chan struct{}
	ctx      context.Context // ends a list-sessions on Close
	cancel   context.CancelFunc
	close    sync.Once

	malformed, pauses atomic.Int64

	mu     sync.Mutex // guards the fields that follow: what Panes, Status and SendKeys read
	status Status
	snap   map[string]Pane  // the panes Added and not Closed
	route  map[string]*conn // the connection that owns each of them
	closed bool

	// The loop's own: touched by the loop goroutine only (and by Close
	// once the loop has returned).
	conns      map[string]*conn // by session id; attaching, attached, or ending
	panes      map[string]*pane
	started    map[string]time.Time // when each session's last client started
	sessConn   *conn                // a list-sessions is in flight on it
	sessWanted bool                 // another list-sessions is wanted
	lastList   time.Time            // the last list-sessions process
	server     string               // the server's pid and start time, once known
	toAttach   []string             // sessions to attach, in order
	attaching  *conn                // the client attaching, if any
	timer      *time.Timer
	due        time.Time // the timer's, if set
}

// Watch watches one tmux server: one control client per session, every
// pane of every session reported to h, panes and sessions created later
// too. A server that is not running (or exits) is looked for again every
// Retry and watched when it comes back; its panes are Closed when it goes.
// The error is for bad arguments only: a missing or old tmux, both a
// socket name and a path.
func Watch(srv Server, h Handler, opts Options) (*Watcher, error) {
	if h == nil {
		return nil, errors.New("tmuxctl.Watch: no Handler")
	}
	if opts.PauseAfter < 0 || opts.Retry < 0 {
		return nil, fmt.Errorf("tmuxctl.Watch: PauseAfter %d and Retry %v must not be negative", opts.PauseAfter, opts.Retry)
	}
	sock, err := srv.SocketPath()
	if err != nil {
		return nil, err
	}
	tmux, version, err := findTmux()
	if err != nil {
		return nil, err
	}
	w := &Watcher{
		srv: srv, h: h, tmux: tmux, sock: sock,
		pauseAfter: orDefault(opts.PauseAfter, 5), retry: orDefault(opts.Retry, time.Second), logf: opts.Log,
		events: make(chan event, 256), quit: make(chan struct{}), loopDone: make(chan struct{}),
		status: Status{Server: srv, Version: version, Since: time.Now()},
		snap:   map[string]Pane{}, route: map[string]*conn{},
		conns: map[string]*conn{}, panes: map[string]*pane{}, started: map[string]time.Time{},
		timer: time.NewTimer(time.Hour),
	}
	w.timer.Stop()
	if w.logf == nil {
		w.logf = func(string, ...any) {}
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	go w.loop()
	return w, nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Panes returns the panes Added and not yet Closed, by id.
func (w *Watcher) Panes() []Pane {
	w.mu.Lock()
	ps := make([]Pane, 0, len(w.snap))
	for _, p := range w.snap {
		ps = append(ps, p)
	}
	w.mu.Unlock()
	slices.SortFunc(ps, func(a, b Pane) int { return idNumber(a.ID) - idNumber(b.ID) })
	return ps
}

func idNumber(id string) int {
	n, _ := strconv.Atoi(id[1:])
	return n
}

// Status returns the watcher's state.
func (w *Watcher) Status() Status {
	w.mu.Lock()
	s := w.status
	s.Panes = len(w.snap)
	w.mu.Unlock()
	s.Malformed = w.malformed.Load()
	s.Pauses = w.pauses.Load()
	return s
}

// keysChunk bounds the bytes of one send-keys: each is three characters
// of the command line.
const keysChunk = 320

// keysWait bounds the wait for each send-keys' reply. A variable for the
// package's tests, which wait it out.
var keysWait = 5 * time.Second

// ErrClosed is returned by SendKeys after Close.
var ErrClosed = errors.New("tmux watcher closed")

// SendKeys writes b to the pane's program exactly, as if typed: with
// send-keys -H on the control client of the session that owns the pane,
// in commands of at most keysChunk bytes, each waited for (at most 5 s).
// An error is tmux's, or says why nothing was sent. NOTE: with the
// window option synchronize-panes on, tmux sends the keys to every pane
// of the window; a pane in copy mode takes them as copy-mode keys.
func (w *Watcher) SendKeys(paneID string, b []byte) error {
	if !validID([]byte(paneID), '%') {
		return fmt.Errorf("send keys: %q is not a tmux pane id (like %%3)", paneID)
	}
	w.mu.Lock()
	c, closed := w.route[paneID], w.closed
	w.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if c == nil {
		return fmt.Errorf("send keys: tmux pane %s is not watched: it is gone, or not yet captured (Panes lists those that are)", paneID)
	}
	for len(b) > 0 {
		n := min(len(b), keysChunk)
		var line strings.Builder
		line.Grow(20 + 3*n)
		line.WriteString("send-keys -H -t ")
		line.WriteString(paneID)
		for _, x := range b[:n] {
			line.WriteByte(' ')
			line.WriteString(hex2[x])
		}
		r, err := c.call(line.String(), reqKeys, keysWait)
		if err != nil {
			return fmt.Errorf("send keys to tmux pane %s: %w", paneID, err)
		}
		if r.failed {
			return fmt.Errorf("send keys to tmux pane %s: tmux: %s", paneID, r.text())
		}
		b = b[n:]
	}
	return nil
}

var hex2 = func() (t [256]string) {
	for i := range t {
		t[i] = fmt.Sprintf("%02x", i)
	}
	return t
}()

// Close detaches every client, waits for each tmux client process to
// exit (killing it after 2 s) and returns once no Handler method runs or
// will be called.
func (w *Watcher) Close() error {
	w.close.Do(func() {
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		w.cancel()
		close(w.quit)
		<-w.loopDone
		var wg sync.WaitGroup
		for _, c := range w.conns {
			wg.Go(c.stop)
		}
		wg.Wait()
		w.mu.Lock()
		w.status.Sessions = 0
		w.mu.Unlock()
	})
	return nil
}
