// Package tmuxwatch makes corral panes of a tmux server's panes: one
// tmuxctl watcher per server (a control-mode client per session), and per
// tmux pane a pane.Source that types through the control client and reads
// the pane's process from /proc. The panes are the user's: corral watches
// them and types only what a person asks for, and letting go leaves them
// as they were.
package tmuxwatch

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/corral-dev/corral/internal/osproc"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/tmuxctl"
	"golang.org/x/sys/unix"
)

// Options is what the daemon gives a watch.
type Options struct {
	// Config is the daemon's config for a pane of tp (its id, name, rules
	// and callbacks). An error skips the tmux pane; it is logged.
	Config func(tp tmuxctl.Pane) (pane.Config, error)
	// Added hands the daemon a pane to list. Failed gives back what Config
	// took when the pane could not be opened.
	Added  func(p *Pane)
	Failed func(cfg pane.Config, err error)
	Logf   func(format string, args ...any)
	// Ctl tunes the control clients.
	Ctl tmuxctl.Options
}

// Pane is a corral pane of a tmux pane.
type Pane struct {
	*pane.Pane
	// TmuxID is tmux's id of the pane ("%3"), unique in its server for
	// the server's life.
	TmuxID string
	server tmuxctl.Server
	socket string
	target atomic.Pointer[string]
	feed   *pane.Feed
	src    *source
}

// Target is the pane's place in tmux now (SESSION:WINDOW.PANE).
func (p *Pane) Target() string { return *p.target.Load() }

// Socket is the tmux server's socket.
func (p *Pane) Socket() string { return p.socket }

// Server is the tmux server the pane belongs to.
func (p *Pane) Server() tmuxctl.Server { return p.server }

// Watch is one watched tmux server.
type Watch struct {
	srv    tmuxctl.Server
	socket string
	o      Options
	ctl    *tmuxctl.Watcher

	// mu guards the fields that follow.
	mu      sync.Mutex
	panes   map[string]*Pane // by tmux id
	closing bool
	skipped int64 // tmux panes not opened
}

// Start watches srv: every pane it has and will have becomes a corral
// pane, handed to o.Added.
func Start(srv tmuxctl.Server, o Options) (*Watch, error) {
	sock, err := srv.SocketPath()
	if err != nil {
		return nil, err
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	w := &Watch{srv: srv, socket: sock, o: o, panes: map[string]*Pane{}}
	if o.Ctl.Log == nil {
		o.Ctl.Log = func(format string, args ...any) { o.Logf("tmux %s: "+format, append([]any{srv}, args...)...) }
	}
	ctl, err := tmuxctl.Watch(srv, handler{w}, o.Ctl)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.ctl = ctl
	w.mu.Unlock()
	return w, nil
}

// Server is the watched server; Socket its socket's path.
func (w *Watch) Server() tmuxctl.Server { return w.srv }
func (w *Watch) Socket() string         { return w.socket }

// Status is the control clients' status.
func (w *Watch) Status() tmuxctl.Status {
	w.mu.Lock()
	ctl := w.ctl
	w.mu.Unlock()
	if ctl == nil {
		return tmuxctl.Status{Server: w.srv}
	}
	return ctl.Status()
}

// Skipped counts the tmux panes that could not be made corral panes.
func (w *Watch) Skipped() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.skipped
}

// Panes returns the panes watched now.
func (w *Watch) Panes() []*Pane {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*Pane, 0, len(w.panes))
	for _, p := range w.panes {
		out = append(out, p)
	}
	return out
}

// Close lets go of every pane (their programs run on, nothing is typed or
// resized) and ends the control clients.
func (w *Watch) Close() error {
	w.mu.Lock()
	w.closing = true
	panes := w.panes
	w.panes = map[string]*Pane{}
	ctl := w.ctl
	w.mu.Unlock()
	for _, p := range panes {
		p.Detach()
	}
	if ctl == nil {
		return nil
	}
	return ctl.Close()
}

func (w *Watch) lookup(id string) *Pane {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.panes[id]
}

// handler takes what the control clients report.
type handler struct{ w *Watch }

func (h handler) Added(tp tmuxctl.Pane, screen []byte) {
	w := h.w
	w.mu.Lock()
	if w.closing || w.panes[tp.ID] != nil {
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	cfg, err := w.o.Config(tp)
	if err != nil {
		w.skip("tmux %s pane %s (%s): %v", w.srv, tp.ID, tp.Target, err)
		return
	}
	src := &source{w: w, id: tp.ID, pid: tp.PID, tty: tp.TTY}
	if proc, ok := osproc.Stat(tp.PID); ok {
		src.start = proc.Start
	}
	src.setSize(tp.Cols, tp.Rows)
	p, feed, err := pane.Open(cfg, src, tp.PID, screen)
	if err != nil {
		if w.o.Failed != nil {
			w.o.Failed(cfg, err)
		}
		w.skip("tmux %s pane %s (%s): %v", w.srv, tp.ID, tp.Target, err)
		return
	}
	wp := &Pane{Pane: p, TmuxID: tp.ID, server: w.srv, socket: w.socket, feed: feed, src: src}
	target := tp.Target
	wp.target.Store(&target)
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		p.Detach()
		if w.o.Failed != nil {
			w.o.Failed(cfg, errors.New("corral stopped watching the tmux server"))
		}
		return
	}
	w.panes[tp.ID] = wp
	w.mu.Unlock()
	w.o.Added(wp)
}

func (w *Watch) skip(format string, args ...any) {
	w.mu.Lock()
	w.skipped++
	w.mu.Unlock()
	w.o.Logf(format, args...)
}

func (h handler) Output(id string, b []byte) {
	if p := h.w.lookup(id); p != nil {
		p.feed.Output(b)
	}
}

func (h handler) Changed(tp tmuxctl.Pane) {
	p := h.w.lookup(tp.ID)
	if p == nil {
		return
	}
	target := tp.Target
	p.target.Store(&target)
	p.src.setSize(tp.Cols, tp.Rows)
	p.feed.Resized(tp.Cols, tp.Rows)
}

func (h handler) Redraw(id string, screen []byte) {
	if p := h.w.lookup(id); p != nil {
		p.feed.Redraw(screen)
	}
}

func (h handler) Closed(id string) {
	w := h.w
	w.mu.Lock()
	p := w.panes[id]
	delete(w.panes, id)
	w.mu.Unlock()
	if p != nil {
		p.feed.Ended(pane.ExitUnknown)
	}
}

// source is one tmux pane as a pane.Source.
type source struct {
	w   *Watch
	id  string
	pid int    // the pane's first process (it leads the pane's session)
	tty string // the pane's terminal, /dev/pts/N
	// start is the first process's start time when the watch found it
	// (0: unknown): a pid another process has since is not signalled.
	start uint64

	mu         sync.Mutex // guards the fields that follow
	cols, rows int
	// fg reads the foreground of the pane's first process, which the
	// sweep asks every second.
	fg *osproc.Foreground
}

func (s *source) setSize(cols, rows int) {
	s.mu.Lock()
	s.cols, s.rows = cols, rows
	s.mu.Unlock()
}

func (s *source) Kind() string { return "tmux" }

// Write types b exactly, through the control client of the pane's
// session.
func (s *source) Write(b []byte) (int, error) {
	s.w.mu.Lock()
	ctl := s.w.ctl
	s.w.mu.Unlock()
	if ctl == nil {
		return 0, errors.New("the tmux server is not watched")
	}
	if err := ctl.SendKeys(s.id, b); err != nil {
		return 0, fmt.Errorf("type into tmux pane %s: %w", s.id, err)
	}
	return len(b), nil
}

func (s *source) Size() (int, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cols, s.rows, nil
}

// SetSize refuses: a tmux pane's size is its window's, the user's.
func (s *source) SetSize(int, int) error { return pane.ErrFixedSize }

// Foreground is the foreground process group of the pane's terminal, as
// the kernel gives it for the pane's first process.
func (s *source) Foreground() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fg == nil {
		s.fg = osproc.NewForeground(s.pid)
	}
	return s.fg.Get()
}

// Unread asks the pane's terminal how much typed input waits, through a
// descriptor of it opened for the question and closed at once.
func (s *source) Unread() (int, error) {
	if s.tty == "" {
		return 0, errors.New("the pane's terminal is not known")
	}
	fd, err := unix.Open(s.tty, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return osproc.InputQueued(fd)
}

// Signal signals the terminal's foreground process group (the agent) and
// the pane's own group (its shell). An interactive shell ignores SIGTERM,
// so `corral kill` ends the agent and leaves the user's shell; SIGKILL
// ends both, and tmux closes the pane.
func (s *source) Signal(sig syscall.Signal) error {
	var first error
	if fg, err := s.Foreground(); err == nil && fg > 0 && fg != s.pid {
		if err := syscall.Kill(-fg, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			first = err
		}
	}
	if s.pid > 0 && s.firstRuns() {
		if err := syscall.Kill(-s.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) && first == nil {
			first = err
		}
	}
	return first
}

// firstRuns reports whether the pane's first process still runs at its
// pid (or its start time is unknown): once it has exited, the pid may be
// another process's, whose group must not be signalled.
func (s *source) firstRuns() bool {
	if s.start == 0 {
		return true
	}
	proc, ok := osproc.Stat(s.pid)
	return ok && proc.Start == s.start
}

// Close releases what Foreground keeps open; the control client is the
// watch's.
func (s *source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fg != nil {
		s.fg.Close()
		s.fg = nil
	}
	return nil
}
