// Package pane hosts one program in a PTY: it spawns it in its own session
// and process group, feeds its output to a detection engine on the wall
// clock, writes the engine's query answers back, tracks the foreground
// process group (and the agent it is), and reaps the process group at the
// end. Never an orphan: Kill signals the whole group.
package pane

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	// closing: Close ends the pane, which goes with it; its last screen
	// is not kept apart (rendering a thousand screens made a shutdown
	// slow).
	closing atomic.Bool
	// group finds every process the program started, wherever it went.
	group procs.Group

	// term is the engine's terminal, which has a lock of its own.
	term *term.Terminal
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
	// foreground group it last looked up (only the clock changes it).
	sweepAt   clockEntry
	sweepSeen int

	in             inputQueue
	droppedReplies atomic.Int64
	// outputAt is when the program last wrote (Unix nanoseconds).
	outputAt atomic.Int64
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
	if cfg.Sweep <= 0 {
		cfg.Sweep = time.Second
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
	ptmx, err = nonBlocking(ptmx)
	if err != nil {
		killGroup(cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		procs.Release(cmd.Process.Pid)
		return nil, err
	}
	m := fileMaster(ptmx)
	src := &ptySource{master: m, pid: cmd.Process.Pid, group: procs.Group{Root: cmd.Process.Pid}}
	if cfg.ID != "" {
		src.group.Mark = "CORRAL_PANE=" + cfg.ID
	}
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
			go p.readLoop()
		}
		go p.heldLoop()
	} else {
		go p.readLoop()
		go p.reap()
	}
	go p.sweepLoop()
	go p.deliverLoop()
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

// AwaitRead waits, at most max, until the program has read every byte
// typed so far: written to the terminal and taken from it. It reports
// whether it has. A TUI reads a burst of input as a paste and does not
// submit a paste's Enter; an Enter typed after the text was read arrives
// on its own.
func (p *Pane) AwaitRead(max time.Duration) bool {
	deadline := time.Now().Add(max)
	for {
		if p.unwritten.Load() == 0 {
			if n, err := p.src.Unread(); err != nil || n == 0 {
				return true // a terminal that cannot say is not waited on
			}
		}
		select {
		case <-p.done:
			return false
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// EnterSettle is the least time the screen must stay still after typed
// text before an Enter follows it: a program may draw a dialog a moment
// after it reads the text (60–100 ms seen), and an Enter then answers it.
const EnterSettle = 150 * time.Millisecond

// AwaitSettled waits, at most limit, until the program has written nothing
// for the pane's settle time (its manifest's answer_settle, at least
// EnterSettle) counted from since (when it read what it was typed) or
// from its last output, whichever is later, and reports whether it has. A
// program that draws nothing when it reads (no echo) may still draw a
// dialog a moment later.
func (p *Pane) AwaitSettled(since time.Time, limit time.Duration) bool {
	settle := max(EnterSettle, p.snap.Load().manifest.AnswerSettle)
	deadline := time.Now().Add(limit)
	for {
		last := time.Unix(0, p.outputAt.Load())
		if since.After(last) {
			last = since
		}
		quiet := time.Since(last)
		if quiet >= settle {
			return true
		}
		wait := settle - quiet
		if time.Now().Add(wait).After(deadline) {
			return false
		}
		select {
		case <-p.done:
			return false
		case <-time.After(wait):
		}
	}
}

// ID returns the pane's id.
func (p *Pane) ID() string { return p.cfg.ID }

// Done is closed when the pane's process group has been reaped.
func (p *Pane) Done() <-chan struct{} { return p.done }

// readLoop feeds the program's output to the engine, one raw read per
// frame (rawio.ReadTerminal).
func (p *Pane) readLoop() {
	defer close(p.readDone)
	rc, err := p.ptmx.file.SyscallConn()
	if err != nil {
		return
	}
	// The work on each read runs on a shared goroutine (onDeepStack):
	// this one, waiting for the next, keeps a small stack.
	var b []byte
	done := make(chan struct{}, 1)
	feed := func() {
		p.mu.Lock()
		if p.ring != nil {
			// Under a holder that shares its ring: before the engine, so
			// that a crash right after the read still leaves the bytes to
			// the next daemon; under the lock, so that whoever holds it
			// sees a screen made of exactly what the ring holds (see
			// checkpointLocked).
			p.ring.Append(b)
		}
		p.queueLocked(p.engine.Feed(time.Now(), b))
		p.checkpointLocked(CheckpointEvery, CheckpointGap)
		p.scheduleLocked()
		p.forwardLocked(b)
		p.unlock()
		p.kick()
	}
	// reap sets stopRead when it gives up on the end of the output.
	rawio.ReadTerminal(rc, &p.stopRead, func(read []byte) {
		p.outputAt.Store(time.Now().UnixNano())
		b = read
		onDeepStack(feed, done)
		b = nil
	})
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
	killGroup(p.pid, syscall.SIGHUP)
	p.group.Signal(syscall.SIGHUP)
	killGroup(p.pid, syscall.SIGKILL)
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
		p.stopRead.Store(true)
		_ = p.ptmx.Close()
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
	if p.cfg.OnExit != nil {
		p.cfg.OnExit(p)
	}
}

// fireDeadline runs on the clock at the engine's deadline.
func (p *Pane) fireDeadline() {
	if !p.mu.tryLock() {
		go p.onTimer() // busy: the clock does not wait for it
		return
	}
	p.onTimerLocked()
}

func (p *Pane) onTimer() {
	p.mu.Lock()
	p.onTimerLocked()
}

// onTimerLocked classifies at the deadline and unlocks mu.
func (p *Pane) onTimerLocked() {
	p.deadline = time.Time{}
	if p.exited {
		p.unlock()
		return
	}
	p.queueLocked(p.engine.Tick(time.Now()))
	p.scheduleLocked()
	p.unlock()
	p.kick()
}

// scheduleLocked arms the timer for the engine's next deadline.
func (p *Pane) scheduleLocked() {
	at, ok := p.engine.Deadline()
	if !ok || p.exited {
		return
	}
	if !p.deadline.IsZero() && !at.Before(p.deadline) {
		return // already armed for an earlier or equal time
	}
	p.deadline = at
	p.timer.reset(at)
}

// sweepLoop starts the safety net: every Sweep, whatever the screen did,
// the clock reclassifies the pane and checks its foreground process.
func (p *Pane) sweepLoop() {
	paneClock.set(&p.sweepAt, nextSweep(time.Now(), p.cfg.Sweep))
}

// nextSweep is the next multiple of every after now: the sweeps of every
// pane with the same interval fall due together, one wake-up of the clock
// for all of them.
func nextSweep(now time.Time, every time.Duration) time.Time {
	return now.Truncate(every).Add(every)
}

// fireSweep runs on the clock.
func (p *Pane) fireSweep() {
	select {
	case <-p.done:
		return
	default:
	}
	paneClock.set(&p.sweepAt, nextSweep(time.Now(), p.cfg.Sweep))
	pgrp, err := p.src.Foreground()
	if err != nil || pgrp <= 0 || pgrp == p.sweepSeen {
		pgrp = 0
	} else {
		p.sweepSeen = pgrp
	}
	if pgrp == 0 && p.mu.tryLock() {
		p.sweepLocked(foreground{})
		return
	}
	// The /proc reads can wait on the other process, and the pane may be
	// busy: neither holds the clock.
	go func() {
		fg := foreground{pgrp: pgrp}
		if pgrp != 0 {
			fg.name, fg.argv = processInfo(pgrp)
		}
		p.mu.Lock()
		p.sweepLocked(fg)
	}()
}

// sweepLocked reclassifies, with the foreground process when it changed,
// and unlocks mu.
func (p *Pane) sweepLocked(fg foreground) {
	if !p.exited {
		if fg.pgrp != 0 {
			p.foregroundLocked(fg)
		}
		p.queueLocked(p.engine.Classify(time.Now()))
		p.scheduleLocked()
	}
	p.checkpointLocked(CheckpointEvery, 0)
	p.unlock()
	p.kick()
}

func (p *Pane) queueLocked(cs []detect.Change) {
	if len(cs) > 0 {
		p.queue = append(p.queue, cs...)
		p.queued.Store(true)
	}
}

// kick starts a delivery goroutine if changes are queued and none runs;
// it never waits.
func (p *Pane) kick() {
	if !p.queued.Load() || !p.delivering.CompareAndSwap(false, true) {
		return
	}
	go func() {
		for {
			p.deliver()
			p.delivering.Store(false)
			// A change queued after deliver looked, whose kick saw this
			// goroutine still running, is delivered here.
			if !p.queued.Load() || !p.delivering.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// deliverLoop delivers what is queued; every later change starts its own
// delivery (kick).
func (p *Pane) deliverLoop() { p.kick() }

// deliver hands queued changes to OnChange in order, outside mu.
func (p *Pane) deliver() {
	p.notifyMu.Lock()
	defer p.notifyMu.Unlock()
	for {
		p.mu.Lock()
		cs := p.queue
		p.queue = nil
		p.queued.Store(false)
		p.unlock()
		if len(cs) == 0 {
			return
		}
		if p.cfg.OnChange != nil {
			for _, c := range cs {
				p.cfg.OnChange(p, c)
			}
		}
	}
}

// Input writes bytes to the program. With guard, it classifies first and
// refuses while the pane is blocked, so a script never types into a prompt
// by accident.
func (p *Pane) Input(data []byte, guard bool) error {
	now, err := p.lockClassified()
	if err != nil {
		return err
	}
	d, _ := p.engine.Decision()
	switch {
	case detect.IsInterrupt(data) && !(guard && d.State == combine.Blocked):
		p.engine.NoteInterrupt(now)
		p.scheduleLocked() // a bounded re-check, whatever the agent draws
	case bytes.ContainsAny(data, "\r\n") && !(guard && d.State == combine.Blocked):
		if hasText(data) {
			p.engine.NoteTyped() // text and Enter at once, as a plain program reads a line
		}
		p.engine.NoteSubmit(now)
		p.scheduleLocked()
	case hasText(data):
		p.engine.NoteTyped()
	}
	p.unlock()
	p.kick()
	if guard && d.State == combine.Blocked {
		return fmt.Errorf("%w (%s)", ErrBlocked, describe(d))
	}
	return p.enqueue(append([]byte(nil), data...), InputWait)
}

// hasText reports whether typed bytes hold text, not only keys: an
// escape sequence (an arrow, a function key) or a control key is none.
func hasText(data []byte) bool {
	if len(data) == 0 || data[0] == 0x1b {
		return false
	}
	for _, b := range data {
		if b > 0x20 && b != 0x7f {
			return true
		}
	}
	return false
}

// lockClassified takes the pane's lock (within LockWait) and classifies
// the screen as it is now; on an error the lock is not held.
func (p *Pane) lockClassified() (time.Time, error) {
	if !p.mu.lockWithin(LockWait) {
		return time.Time{}, ErrBusy
	}
	if p.exited {
		p.unlock()
		return time.Time{}, ErrExited
	}
	now := time.Now()
	p.queueLocked(p.engine.Classify(now))
	return now, nil
}

// Answer types the manifest's keystrokes for choice ("yes", "always",
// "no", "cancel" or an option number). It refuses unless the pane is
// blocked, classifying first.
func (p *Pane) Answer(choice string) (string, error) {
	now, err := p.lockClassified()
	if err != nil {
		return "", err
	}
	d, _ := p.engine.Decision()
	if d.State != combine.Blocked {
		p.unlock()
		p.kick()
		return "", fmt.Errorf("%w (it is %s)", ErrNotBlocked, d.State)
	}
	m := p.engine.Manifest()
	// The prompt a rule recognised may take its own keys.
	keys, ok := m.KeysFor(d.Rule, choice)
	if !ok {
		p.unlock()
		p.kick()
		return "", fmt.Errorf("%w %q for %s; it knows %s", ErrNoAnswer, choice, m.Name, answerNames(m))
	}
	p.queueLocked(p.engine.MarkSeen(now))
	if choice == rules.AnswerNo || choice == rules.AnswerCancel || detect.IsInterrupt([]byte(keys)) {
		p.engine.NoteInterrupt(now) // a refusal ends the turn, or lets it go on
	}
	p.unlock()
	p.kick()
	return keys, p.enqueue([]byte(keys), InputWait)
}

// HookQueue bounds the hook reports waiting for a busy pane.
const HookQueue = 64

// ApplyHook records what the agent's hook said. It never waits on the
// pane (a hook must not hold its agent) and never drops a report while
// the pane is merely busy (a lost prompt is the worst mistake): reports
// are applied in order by the pane's hook loop. Only a queue that is full
// drops one, and counts it.
func (p *Pane) ApplyHook(h detect.Hook) {
	p.hooksOnce.Do(func() {
		p.hooks = make(chan detect.Hook, HookQueue)
		go p.hookLoop()
	})
	select {
	case p.hooks <- h:
	default:
		p.hooksDropped.Add(1)
	}
}

func (p *Pane) hookLoop() {
	for {
		select {
		case h := <-p.hooks:
			p.mu.Lock()
			if !p.exited {
				p.queueLocked(p.engine.ApplyHook(time.Now(), h))
				p.scheduleLocked()
			}
			p.unlock()
			p.kick()
		case <-p.done:
			return
		}
	}
}

// MarkSeen says a person looked at the pane (not waiting more than
// LockWait for it).
func (p *Pane) MarkSeen() {
	if !p.mu.lockWithin(LockWait) {
		return
	}
	if !p.exited {
		p.queueLocked(p.engine.MarkSeen(time.Now()))
	}
	p.unlock()
	p.kick()
}

// A pane's size, in columns and rows, wherever it comes from.
const (
	MinSize = 2
	MaxSize = 1000
)

// CheckSize refuses a size outside MinSize..MaxSize: a terminal's cells
// cost memory, and the PTY holds sizes in 16 bits.
func CheckSize(cols, rows int) error {
	if cols < MinSize || rows < MinSize || cols > MaxSize || rows > MaxSize {
		return fmt.Errorf("size %dx%d is out of range: columns and rows must each be from %d to %d", cols, rows, MinSize, MaxSize)
	}
	return nil
}

// Resize changes the PTY and terminal size.
func (p *Pane) Resize(cols, rows int) error {
	if err := CheckSize(cols, rows); err != nil {
		return err
	}
	if !p.mu.lockWithin(LockWait) {
		return ErrBusy
	}
	defer p.unlock()
	if p.exited {
		return ErrExited
	}
	if err := p.src.SetSize(cols, rows); err != nil {
		return err
	}
	p.cfg.Cols, p.cfg.Rows = cols, rows
	p.engine.Resize(time.Now(), cols, rows)
	p.scheduleLocked()
	return nil
}

// Kill signals the pane's whole process group.
func (p *Pane) Kill(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if p.snap.Load().info.Exited {
		return nil
	}
	return p.src.Signal(sig)
}

// Close ends the pane: SIGHUP to its group, SIGKILL after grace, and waits
// for the reap. A pane of an outside terminal is let go instead: its
// program is the terminal's owner's, not corral's to end.
func (p *Pane) Close(grace time.Duration) {
	if p.outside != nil {
		p.Detach()
		return
	}
	p.closing.Store(true)
	_ = p.Kill(syscall.SIGHUP)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = p.Kill(syscall.SIGKILL)
	<-p.done
}

func killGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
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

func answerNames(m *rules.Manifest) string {
	var names []string
	for _, n := range []string{rules.AnswerYes, rules.AnswerAlways, rules.AnswerNo, rules.AnswerCancel} {
		if _, ok := m.Answers[n]; ok {
			names = append(names, n)
		}
	}
	if _, ok := m.Answers[rules.AnswerOption]; ok {
		names = append(names, "an option number")
	}
	if len(names) == 0 {
		return "no answers"
	}
	return fmt.Sprint(names)
}

var _ io.Writer = replyWriter{}
