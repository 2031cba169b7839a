// Package pane hosts one program in a PTY: it spawns it in its own session
// and process group, feeds its output to a detection engine on the wall
// clock, writes the engine's query answers back, tracks the foreground
// process group (and the agent it is), and reaps the process group at the
// end. Never an orphan: Kill signals the whole group.
package pane

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/holder"
	"github.com/corral-dev/corral/internal/procs"
	"github.com/corral-dev/corral/internal/rawio"
	"github.com/corral-dev/corral/internal/rules"
	"github.com/corral-dev/corral/internal/term"
)

// Config describes a pane to start.
type Config struct {
	ID, Name   string
	Argv       []string
	Dir        string
	Env        []string // added to the daemon's environment
	Cols, Rows int
	Rules      *rules.Set
	// Agent forces a manifest; empty recognises the agent from the
	// foreground process, then from the screen.
	Agent string
	// Seen is the agent recognised before (a pane adopted from an earlier
	// daemon): it is the pane's until the foreground process says otherwise.
	Seen string
	// Starting says the program is started now (not adopted): an agent
	// known by Agent or by the command's name reads working, kind
	// starting, until it is ready for input (see detect.Config.Started).
	Starting bool
	// OnChange receives every state change, in order, from the pane's own
	// goroutines, with no lock held.
	OnChange func(p *Pane, c detect.Change)
	// OnExit is called once, after the process group is reaped.
	OnExit func(p *Pane)
	// Sweep is the safety-net classification interval (default 1s).
	Sweep time.Duration
	// SettleAfter is how long nothing happens in a pane (no output, no
	// input, no report, no change) before its sweep slows to QuietSweep
	// (defaults: DefaultSettleAfter, DefaultQuietSweep; see schedule.go).
	SettleAfter, QuietSweep time.Duration
	// CompactAfter is how long the program is quiet before the pane's
	// screen is packed, checked at each sweep (0: DefaultCompactAfter;
	// negative: never).
	CompactAfter time.Duration
	// Quiet and MaxWait tune the engine's classification window (0: its
	// defaults).
	Quiet, MaxWait time.Duration
	// Holder, when set, runs the program under a holder process that
	// outlives the daemon (see package holder); nil runs it on a PTY the
	// pane owns.
	Holder *Holding
}

// Errors of guarded input.
var (
	ErrBlocked    = errors.New("the pane is blocked on a prompt")
	ErrNotBlocked = errors.New("the pane is not blocked")
	ErrExited     = errors.New("the pane has exited")
	ErrNoAnswer   = errors.New("no such answer")
	// ErrUnknownPrompt says the pane is blocked on something its screen
	// rules do not recognise: corral does not know which keys answer it.
	ErrUnknownPrompt = errors.New("its screen shows no prompt corral knows the keys of")
	// ErrNotReading says input gave up waiting for the program to read.
	ErrNotReading = errors.New("the program is not reading its input")
	// ErrBusy says a request gave up waiting for the pane.
	ErrBusy = fmt.Errorf("the pane did not answer within %v: its read loop is busy or stuck; try again, see it with corral screen, or end it with corral kill", LockWait)
)

// Pane is one hosted program.
type Pane struct {
	cfg Config
	cmd *exec.Cmd // nil under a holder
	// hc is the holder's connection (nil for a PTY of the pane's own).
	hc *holder.Conn
	// replaying drops the terminal's query answers while a holder's ring
	// is replayed: the program asked those long ago.
	replaying atomic.Bool
	heldState
	// src is the program's terminal; ptmx is the same PTY for the loops
	// that read it (nil for an outside source).
	src     Source
	ptmx    *master
	outside *outsideState
	started time.Time
	pid     int
	done    chan struct{} // closed when the process group is reaped
	// readDone is closed when the read loop has ended; stopRead ends it.
	readDone chan struct{}
	stopRead atomic.Bool
	rd       termRead
	// closing: Close ends the pane, which goes with it; its last screen
	// is not kept apart (rendering a thousand screens made a shutdown
	// slow).
	closing atomic.Bool
	// group finds every process the program started, wherever it went.
	group procs.Group

	// term is the engine's terminal, which has a lock of its own.
	term *term.Terminal
	// rowsPackedAt is when the sweep last packed the rows the program did
	// not draw (see compactIdleLocked); under mu.
	rowsPackedAt time.Time
	// rowsSettled: the sweep has packed rows of this screen once, and
	// asked for the heap's trim after it (compactIdleLocked).
	rowsSettled bool
	// argv is cfg.Argv's own copy, shared by snapshots: never written.
	argv []string
	// snap is what readers see (Info and the like): published by whoever
	// holds mu as it lets go (unlock), loaded without waiting.
	snap atomic.Pointer[snapshot]

	// mu guards the fields that follow, and every call into engine; it is
	// released with unlock, which publishes what changed under it.
	mu       lock
	engine   *detect.Engine
	name     string
	agent    string // name of the manifest in use
	fgPgrp   int
	fgName   string
	exited   bool
	exitCode int
	exitedAt time.Time
	timer    *paneTimer // fires at the engine's next deadline
	deadline time.Time
	// sweepAt is the pane's sweep on the clock; sweepSeen is the
	// foreground group it last looked up, sweepName its leader's name then
	// (only the clock changes them).
	sweepAt   clockEntry
	sweepSeen int
	sweepName string
	// sweepMu orders the moves of sweepAt between the paces (sweepSlow
	// says which is armed); stirredAt is when something other than output
	// last happened (Unix nanoseconds). See schedule.go.
	sweepMu   sync.Mutex
	sweepSlow atomic.Bool
	stirredAt atomic.Int64

	in             inputQueue
	droppedReplies atomic.Int64
	// outputAt is when the program last wrote (Unix nanoseconds).
	outputAt atomic.Int64
	// feeding counts output taken from the terminal (or the holder) and
	// not yet fed to the screen: AwaitSettled waits for it. The poller's
	// reader counts itself before its first read, so no output is ever
	// out of the kernel and uncounted; the other readers count once a
	// read returns.
	feeding atomic.Int32
	// unwritten counts input queued or being written to the program.
	unwritten atomic.Int64
	// hooks queues hook reports for hookLoop, started with the first.
	hooks        chan detect.Hook
	hooksOnce    sync.Once
	hooksDropped atomic.Int64

	// watchers get the program's raw output (attached terminals); guarded
	// by mu.
	watchers map[*Watcher]struct{}

	// Changes are queued under mu and delivered in order, outside mu, by
	// a delivery goroutine started when there are some (kick) and, at the
	// end, by reap: whoever holds notifyMu. A request never waits for
	// OnChange.
	notifyMu   sync.Mutex
	queue      []detect.Change
	queued     atomic.Bool // queue is not empty
	delivering atomic.Bool // a delivery goroutine runs
}

// Start spawns the program.
func Start(cfg Config) (*Pane, error) {
	if len(cfg.Argv) == 0 {
		return nil, errors.New("no command to run")
	}
	if cfg.Cols == 0 && cfg.Rows == 0 {
		cfg.Cols, cfg.Rows = 120, 32
	}
	if err := CheckSize(cfg.Cols, cfg.Rows); err != nil {
		return nil, err
	}
	path, err := procs.Resolve(cfg.Argv[0], cfg.Dir, cfg.Env)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Argv[0], err)
	}
	if cfg.Holder != nil {
		return startHeld(cfg, path)
	}
	cmd := exec.Command(path, cfg.Argv[1:]...)
	cmd.Args[0] = cfg.Argv[0]
	cmd.Dir = cfg.Dir
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "COLORTERM=truecolor")
	cmd.Env = append(cmd.Env, cfg.Env...)
	var ptmx *os.File
	_, err = procs.Spawn(func() (int, error) {
		var err error
		ptmx, err = pty.StartWithAttrs(cmd, &pty.Winsize{Cols: uint16(cfg.Cols), Rows: uint16(cfg.Rows)},
			&syscall.SysProcAttr{Setsid: true, Setctty: true})
		if err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Argv[0], err)
	}
	group := procs.NewGroup(cmd.Process.Pid, paneMark(cfg.ID)) // not waited for yet: the pid is its own
	fd, err := nonBlocking(ptmx)
	if err != nil {
		_ = group.SignalGroup(syscall.SIGKILL)
		_ = cmd.Wait()
		procs.Release(cmd.Process.Pid)
		return nil, err
	}
	m := readMaster(fd)
	src := &ptySource{master: m, group: group}
	p := newPane(cfg, src, m, cmd.Process.Pid, time.Now())
	p.cmd = cmd
	p.group = src.group
	p.run()
	return p, nil
}

// newPane makes a pane's state and engine for a program already running
// on src (whose PTY, if the pane reads it, is ptmx); run starts its
// goroutines.
func newPane(cfg Config, src Source, ptmx *master, pid int, started time.Time) *Pane {
	cfg.setPaces()
	p := &Pane{cfg: cfg, src: src, ptmx: ptmx, started: started, pid: pid, done: make(chan struct{}), readDone: make(chan struct{}), name: cfg.Name,
		mu: newLock()}
	p.sweepAt = clockEntry{work: p.fireSweep, kind: clockSweep, index: -1}
	dc := detect.Config{Cols: cfg.Cols, Rows: cfg.Rows, Rules: cfg.Rules, Agent: cfg.Agent,
		MarkDone: true, Replies: replyWriter{p}, Quiet: cfg.Quiet, MaxWait: cfg.MaxWait}
	if dc.Agent == "" && cfg.Seen != "" && cfg.Rules != nil {
		if _, ok := cfg.Rules.ByName(cfg.Seen); ok {
			dc.Agent = cfg.Seen
		}
	}
	if cfg.Starting {
		dc.Started = started
		if dc.Agent == "" && len(cfg.Argv) > 0 && cfg.Rules != nil {
			// Known by its command before it draws anything.
			if m := cfg.Rules.IdentifyProcess(filepath.Base(cfg.Argv[0]), cfg.Argv); m != nil {
				dc.Agent = m.Name
			}
		}
	}
	p.engine = detect.New(dc)
	p.term = p.engine.Terminal()
	p.agent = p.engine.Manifest().Name
	p.timer = newPaneTimer(p)
	p.argv = append([]string(nil), cfg.Argv...)
	p.publishLocked() // the first snapshot; nothing else runs yet
	return p
}

func (p *Pane) run() {
	if p.hc != nil {
		if p.ring != nil {
			p.startReading()
		}
		go p.heldLoop()
	} else {
		p.startReading()
		go p.reap()
	}
	go p.sweepLoop()
	go p.deliverLoop()
	trimHeapLater()
}

// replyWriter queues the terminal's query answers for the program. It
// never blocks: it runs inside the read loop, and a program that does not
// read its input must not stop corral from reading its output.
type replyWriter struct{ p *Pane }

func (w replyWriter) Write(b []byte) (int, error) {
	// An outside terminal (tmux) answers its program's queries itself:
	// a second answer would arrive as typed input.
	if w.p.replaying.Load() || w.p.outside != nil {
		return len(b), nil
	}
	w.p.unwritten.Add(1)
	if queued, _, _ := w.p.push(append([]byte(nil), b...)); !queued {
		w.p.unwritten.Add(-1)
		w.p.droppedReplies.Add(1)
	}
	return len(b), nil
}

// ID returns the pane's id.
func (p *Pane) ID() string { return p.cfg.ID }

// Done is closed when the pane's process group has been reaped.
func (p *Pane) Done() <-chan struct{} { return p.done }

// readLoop feeds the program's output to the engine, one raw read per
// frame, from a goroutine of the pane's (where the terminal does not wait
// in the process's poller: see startReading).
func (p *Pane) readLoop() {
	defer close(p.readDone)
	if p.ptmx.file == nil {
		p.readBareLoop()
		return
	}
	rc, err := p.ptmx.file.SyscallConn()
	if err != nil {
		return
	}
	// The work on each read runs on a shared goroutine (onDeepStack):
	// this one, waiting for the next, keeps a small stack.
	var b []byte
	done := make(chan struct{}, 1)
	feed := func() { p.feedRead(b) }
	// stopReading sets stopRead.
	rawio.ReadTerminal(rc, &p.stopRead, func(read []byte) {
		p.feeding.Add(1)
		p.noteOutput()
		b = read
		onDeepStack(feed, done)
		b = nil
		p.feeding.Add(-1)
	})
}

// readBareLoop reads a bare terminal whose watch by the poller failed:
// its waits are bounded polls (roomWait), so stopRead is seen within one.
func (p *Pane) readBareLoop() {
	buf := make([]byte, 32<<10)
	for !p.stopRead.Load() {
		n, err := p.ptmx.bare.Read(buf)
		if n > 0 {
			p.feeding.Add(1)
			p.noteOutput()
			p.feedRead(buf[:n])
			p.feeding.Add(-1)
		}
		if err != nil {
			return
		}
	}
}

// DrainWait bounds how long the end of a program's output is read after
// every process of its pane has been ended.
const DrainWait = time.Second

// reap waits for the program to exit, ends every process it left (in its
// group, its session, or gone elsewhere: a grandchild that left with
// setsid keeps the terminal open, so the end of file is not waited for),
// and records the exit.
func (p *Pane) reap() {
	procs.WaitExit(p.pid)
	// Everything it left (a background job of a shell, a daemon it
	// started) goes too, found while the program is a zombie: its pid
	// cannot be reused until Wait.
	_ = p.group.SignalGroup(syscall.SIGHUP)
	p.group.Signal(syscall.SIGHUP)
	_ = p.group.SignalGroup(syscall.SIGKILL)
	p.group.KillAll(5 * time.Second)
	err := p.cmd.Wait()
	procs.Release(p.pid)
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		} else {
			code = -1
		}
	}
	p.drain()
	p.ended(code)
}

// drain waits for the read loop to reach the end of the terminal's output,
// at most DrainWait once every process of the pane has been ended.
func (p *Pane) drain() {
	select {
	case <-p.readDone:
	case <-time.After(DrainWait):
		// Something holds the terminal still: stop reading it.
		p.stopReading()
		<-p.readDone
	}
}

// ended records the program's exit, once its output has been read.
func (p *Pane) ended(code int) {
	p.mu.Lock()
	p.exited, p.exitCode, p.exitedAt = true, code, time.Now()
	p.timer.Stop()
	paneClock.remove(&p.sweepAt)
	p.queueLocked(p.engine.SetProcess(p.exitedAt, combine.Process{PaneExited: true, ExitCode: code}))
	p.unlock()
	// Only the last screen is needed now: release the emulator.
	if !p.closing.Load() {
		p.term.Freeze()
	}
	p.deliver()
	_ = p.src.Close()
	p.mu.Lock()
	for w := range p.watchers {
		w.closeLocked("the program exited")
	}
	p.unlock()
	close(p.done)
	trimHeapLater()
	if p.cfg.OnExit != nil {
		p.cfg.OnExit(p)
	}
}

func describe(d combine.Decision) string {
	s := string(d.State)
	if d.Kind != "" {
		s += "/" + d.Kind
	}
	if d.Message != "" {
		s += ": " + d.Message
	}
	return s
}

// answerNames are the answers the prompt a rule recognised takes ("": the
// manifest's), for an error.
func answerNames(m *rules.Manifest, rule string) string {
	names, options := builtinAnswers(m, rule)
	for _, c := range m.ChoicesFor(rule) {
		names = append(names, c.Name+" ("+c.Label+")")
	}
	if options {
		names = append(names, "an option number")
	}
	if len(names) == 0 {
		return "no answers"
	}
	return strings.Join(names, ", ")
}

var _ io.Writer = replyWriter{}
