package pane

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/holder"
	"github.com/corral-dev/corral/internal/status"
)

// Holding says how a pane's holder is started.
type Holding struct {
	// Pool is where the pane's holder runs: a process shared with other
	// panes. Nil: a holder process of its own (Exe, Log).
	Pool   *holder.Pool
	Exe    string   // the corral binary: its hidden hold command
	Socket string   // where the holder listens
	Secret string   // the pane's secret, proven by both sides
	Log    *os.File // the holder's stderr (nil: none)
	Ring   int      // output kept for the next daemon (0: the default)
}

// StartWait bounds how long a holder takes to start and answer.
const StartWait = 10 * time.Second

// heldEnd is how a holder's connection ended.
type heldEnd struct {
	code int
	lost error // the connection broke before the exit status came
}

// paneMark is the environment entry every process of pane id carries
// ("" for a pane without an id).
func paneMark(id string) string {
	if id == "" {
		return ""
	}
	return "CORRAL_PANE=" + id
}

// startHeld starts the program under a holder and connects to it.
func startHeld(cfg Config, path string) (*Pane, error) {
	env := append(os.Environ(), "TERM=xterm-256color", "COLORTERM=truecolor")
	env = append(env, cfg.Env...)
	mark := paneMark(cfg.ID)
	h := cfg.Holder
	hcfg := holder.Config{Socket: h.Socket, Secret: h.Secret, Path: path, Argv: cfg.Argv, Dir: cfg.Dir,
		Env: env, Cols: cfg.Cols, Rows: cfg.Rows, Mark: mark, Ring: h.Ring}
	var st holder.Started
	var err error
	if h.Pool != nil {
		st, err = h.Pool.Start(hcfg, StartWait)
	} else {
		st, err = holder.Spawn(h.Exe, hcfg, h.Log, StartWait)
	}
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Argv[0], err)
	}
	hc, err := holder.Dial(h.Socket, h.Secret, StartWait)
	if err != nil {
		st.Abandon()
		return nil, fmt.Errorf("start %s: connect to its holder: %w", cfg.Argv[0], err)
	}
	m := heldMaster(hc)
	p := newPane(cfg, &heldSource{master: m, hc: hc}, m, hc.Welcome.ProgramPID, time.Now())
	p.hc, p.ring, p.holderPID = hc, hc.Ring, hc.Welcome.HolderPID
	p.group = hc.Welcome.Group(mark)
	p.run()
	return p, nil
}

// heldMaster is the daemon's descriptor of a holder's terminal: in the
// poller when the daemon reads the terminal itself (the holder shares its
// ring), bare when the holder sends the output.
func heldMaster(hc *holder.Conn) *master {
	fd := hc.TakePTY()
	if hc.Ring != nil {
		return readMaster(fd)
	}
	return bareMaster(fd)
}

// Adopted is what the daemon kept of a pane whose holder it reconnects to.
type Adopted struct {
	Started time.Time
	// Records are the pane's OSC 7501 records as last known: the ring may
	// no longer hold the reports that made them.
	Records []status.Record
	// Last is the state last logged for the pane: the first change
	// reported after the replay is from it. Since is when it began.
	Last  combine.Decision
	Since time.Time
	// Hooks is what the pane's hooks last said, as Standing returned it:
	// they do not say it again.
	Hooks detect.Standing
}

// ReplayWait bounds the replay of a holder's ring.
const ReplayWait = 5 * time.Second

// Adopt makes a pane of a running holder's program: the ring is replayed
// into a fresh engine (the program's old queries are not answered again,
// and the changes it makes are not reported), the agent is recognised
// from the foreground process, one change is reported if the pane's state
// differs from a.Last, and the program is asked to redraw (SIGWINCH).
// cfg's size gives way to the terminal's own.
func Adopt(cfg Config, hc *holder.Conn, a Adopted) (*Pane, error) {
	ptmx := heldMaster(hc)
	if ws, err := getSize(ptmx); err == nil && CheckSize(int(ws.Col), int(ws.Row)) == nil {
		cfg.Cols, cfg.Rows = int(ws.Col), int(ws.Row)
	}
	if err := CheckSize(cfg.Cols, cfg.Rows); err != nil {
		ptmx.Close()
		return nil, err
	}
	started := a.Started
	if started.IsZero() {
		started = time.Now()
	}
	p := newPane(cfg, &heldSource{master: ptmx, hc: hc}, ptmx, hc.Welcome.ProgramPID, started)
	p.hc, p.ring, p.holderPID = hc, hc.Ring, hc.Welcome.HolderPID
	// Its start time, from the holder, tells the program from a process
	// given its pid later, once the holder is gone (reapHeld).
	p.group = hc.Welcome.Group(paneMark(cfg.ID))
	p.replaying.Store(true)
	now := time.Now()
	for _, r := range a.Records {
		if r.Validate() == nil {
			at := now
			if !r.Updated.IsZero() && r.Updated.Before(now) {
				at = r.Updated // a record keeps when its report arrived
			}
			p.engine.Feed(at, []byte(r.Report.Encode()))
		}
	}
	if hc.Ring != nil {
		// Nobody appends to the ring now: the holder stopped reading
		// before its welcome, and this daemon reads from here on.
		if b := hc.Ring.Bytes(); len(b) > 0 {
			p.engine.Feed(time.Now(), b)
		}
	}
	hc.SetDeadline(time.Now().Add(ReplayWait))
	exited := false
	var exit heldEnd
	for {
		m, err := hc.Next()
		if err != nil {
			p.replaying.Store(false)
			p.engine.Close()
			p.ptmx.Close()
			return nil, fmt.Errorf("replay the holder's output: %w", err)
		}
		if m.Output != nil {
			p.engine.Feed(time.Now(), m.Output)
			continue
		}
		if m.Exit {
			exited = true
			exit = heldEnd{code: m.Code}
			break
		}
		if m.Live {
			if hc.Welcome.Exited {
				continue // the exit status follows
			}
			break
		}
	}
	hc.SetDeadline(time.Time{})
	p.replaying.Store(false)
	now = time.Now()
	p.mu.Lock()
	if pgrp, err := foregroundPgrp(p.ptmx); err == nil && pgrp > 0 && !exited {
		fg := foreground{pgrp: pgrp}
		fg.name, fg.argv = processInfo(pgrp)
		p.foregroundLocked(fg)
	}
	p.engine.RestoreStanding(a.Hooks, now)
	p.engine.Classify(now)
	if !exited {
		p.engine.HookSurvivedReplay(now) // its redraw follows (SIGWINCH, below)
	}
	if d, _ := p.engine.Decision(); a.Last.State == combine.Idle && d.State == combine.Done {
		// The replay ended the last turn again, but the last daemon saw
		// it end: a new turn needs input, and only a daemon gives it.
		p.engine.MarkSeen(now)
	}
	p.engine.Resume(a.Last, a.Since)
	p.queue = nil // the replay's changes happened while no daemon watched
	if d, _ := p.engine.Decision(); d.State != a.Last.State || d.Kind != a.Last.Kind || a.Last.State == "" {
		p.queueLocked([]detect.Change{{At: now, Previous: a.Last, Decision: d}})
	}
	p.scheduleLocked()
	p.unlock()
	if !exited {
		// A full-screen program redraws its screen on SIGWINCH.
		if pgrp, err := foregroundPgrp(p.ptmx); err == nil && pgrp > 0 {
			_ = syscall.Kill(-pgrp, syscall.SIGWINCH)
		}
	}
	if p.ring != nil {
		p.startReading() // to the end of what the terminal holds
	}
	switch {
	case !exited:
		go p.heldLoop()
	case p.ring == nil:
		close(p.readDone)
		fallthrough
	default:
		go p.reapHeld(exit)
	}
	go p.sweepLoop()
	go p.deliverLoop()
	p.kick()
	return p, nil
}

// heldLoop takes what the holder says: the program's exit, and its output
// when the daemon does not read the terminal itself; then it takes the
// pane's end (reapHeld). A pane whose terminal the daemon reads hears
// only the exit: the holder's connection waits in the poller shared by
// every pane (watchHeld), with no goroutine of the pane's.
func (p *Pane) heldLoop() {
	if p.ring != nil && p.watchHeld() {
		return
	}
	var end *heldEnd
	var out []byte
	done := make(chan struct{}, 1)
	feed := func() { p.feedHeld(out) }
	err := p.hc.Run(func(m holder.Msg) bool {
		if len(m.Output) > 0 {
			p.feeding.Add(1)
			p.noteOutput()
			out = m.Output
			onDeepStack(feed, done) // on a shared goroutine, as readLoop's
			out = nil
			p.feeding.Add(-1)
		}
		if m.Exit {
			end = &heldEnd{code: m.Code}
			return false
		}
		return true
	})
	if end == nil {
		end = &heldEnd{lost: err}
	}
	if p.ring == nil {
		close(p.readDone) // the output came here, and has all come
	}
	p.reapHeld(*end)
}

// feedHeld feeds output the holder sent.
func (p *Pane) feedHeld(out []byte) {
	p.mu.Lock()
	p.queueLocked(p.engine.Feed(time.Now(), out))
	p.scheduleLocked()
	p.forwardLocked(out)
	p.unlock()
	p.kick()
}

// watchHeld has the poller watch the holder's connection; reapHeld runs
// when it ends. It is false if the connection cannot be watched (heldLoop
// reads it then).
func (p *Pane) watchHeld() bool {
	var end atomic.Pointer[heldEnd]
	err := p.hc.Watch(func(m holder.Msg) bool {
		if len(m.Output) > 0 { // a holder sharing its ring sends none
			p.feeding.Add(1)
			p.noteOutput()
			p.feedHeld(m.Output)
			p.feeding.Add(-1)
		}
		if m.Exit {
			end.Store(&heldEnd{code: m.Code})
			return false
		}
		return true
	}, func(err error) {
		e := end.Load()
		if e == nil {
			e = &heldEnd{lost: err}
		}
		p.reapHeld(*e)
	})
	return err == nil
}

// reapHeld takes the end of the holder's connection: the program's end,
// or the holder gone. A pane handed over to the next daemon ends here
// without an exit.
func (p *Pane) reapHeld(end heldEnd) {
	if !p.handing.CompareAndSwap(heldRunning, heldEnding) {
		// Detach claimed the pane first: whatever the holder said last is
		// for the next daemon.
		p.mu.Lock()
		for w := range p.watchers {
			w.closeLocked("the daemon handed the pane over to a new daemon; attach again")
		}
		p.timer.Stop()
		p.unlock()
		_ = p.ptmx.Close()
		close(p.done)
		return
	}
	code := end.code
	if end.lost != nil {
		// The holder is gone (killed): nobody reads the program's output
		// any more, so the program and everything it started are ended
		// here, as the holder would have.
		code = -1
		p.lost.Store(&[]string{fmt.Sprintf("the pane's holder (pid %d) is gone (%v); its processes were ended", p.holderPID, end.lost)}[0])
		// Nobody waits for the program now: it may have exited and been
		// reaped long since, and its pid be another's. The group's start
		// time keeps that process, its session and group alone.
		g := p.group
		g.Signal(syscall.SIGHUP)
		_ = g.SignalGroup(syscall.SIGHUP)
		time.Sleep(100 * time.Millisecond)
		_ = g.SignalGroup(syscall.SIGKILL)
		g.KillAll(2 * time.Second)
	}
	if p.ring != nil {
		p.drain() // this daemon reads the terminal: to its end
	}
	if end.lost == nil {
		_ = p.hc.Collect()
	}
	p.letGoOfRing()
	p.ended(code)
	_ = p.hc.Close()
}

// Detach lets go of a pane's holder without ending its program, for the
// next daemon to adopt; Done is closed once it has. A pane of an outside
// terminal stops watching it. A pane the daemon's own PTY holds is not
// touched (it reports false).
func (p *Pane) Detach() bool {
	if p.outside != nil {
		return p.detachOutside()
	}
	if p.hc == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
	}
	// Input already typed reaches the program first.
	for deadline := time.Now().Add(InputWait); p.unwritten.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(2 * time.Millisecond)
	}
	if !p.handing.CompareAndSwap(heldRunning, heldDetaching) {
		return false // the program's end is being taken: it is not handed over
	}
	if p.ring != nil {
		// Stop reading before letting go: every byte read is in the
		// ring, and the holder reads on from where this stopped.
		p.stopReading()
		<-p.readDone
	}
	p.letGoOfRing()
	_ = p.hc.Close()
	<-p.done
	return true
}

// Standing is what the pane's hooks last said and still stands, for the
// next daemon to adopt with.
func (p *Pane) Standing() detect.Standing {
	p.mu.Lock()
	defer p.unlock()
	return p.engine.Standing()
}

// Held reports whether the pane runs under a holder, and the holder's pid.
func (p *Pane) Held() (bool, int) { return p.hc != nil, p.holderPID }

// Lost says why the pane ended without its exit status ("" when it did
// not): its holder went away.
func (p *Pane) Lost() string {
	if s := p.lost.Load(); s != nil {
		return *s
	}
	return ""
}

type heldState struct {
	// ring is the holder's shared ring when this daemon reads the
	// terminal itself (nil otherwise); set before the loops.
	ring *holder.Ring
	// ringGone: the ring is about to be unmapped (the connection
	// closes); guarded by mu.
	ringGone bool
	// checkpointAt is when the last checkpoint was written; guarded by mu.
	checkpointAt time.Time
	holderPID    int
	// handing is who has the pane's end: still nobody, Detach (handed to
	// the next daemon), or reapHeld (the program ended or its holder went).
	handing atomic.Int32
	lost    atomic.Pointer[string]
}

const (
	heldRunning int32 = iota
	heldDetaching
	heldEnding
)

// CheckpointEvery is how much output a held pane's ring takes before the
// daemon writes a checkpoint into it (the screen and its history as the
// escape sequences that redraw them), after which the holder's memory of
// the output before is released: a ring keeps about a checkpoint and up
// to this much output since, not its whole size.
const CheckpointEvery = 32 << 10

// CheckpointGap spaces the checkpoints of a pane that writes without a
// pause (a flood): the read loop writes one at most this often, and the
// sweep writes the one it skipped.
const CheckpointGap = 250 * time.Millisecond

// checkpointLocked writes a checkpoint into the shared ring when at least
// every bytes of output came since the last, and gap passed since it (the
// read loop: CheckpointEvery, CheckpointGap; the sweep: no gap). Only
// holders of mu append to the ring, after feeding the bytes to the engine
// under the same hold, so the screen is exactly what the ring replays.
func (p *Pane) checkpointLocked(every uint64, gap time.Duration) {
	if p.ring == nil || p.ringGone || p.ring.SinceCheckpoint() < every {
		return
	}
	now := time.Now()
	if now.Sub(p.checkpointAt) < gap {
		return
	}
	if cp, ok := p.term.Checkpoint(); ok && p.ring.Checkpoint(cp) {
		p.checkpointAt = now
	}
}

// letGoOfRing stops the checkpoints before the connection, and the ring
// with it, is closed.
func (p *Pane) letGoOfRing() {
	if p.ring == nil {
		return
	}
	p.mu.Lock()
	p.ringGone = true
	p.unlock()
}

var errNoSize = errors.New("no size")

func getSize(m *master) (*unix.Winsize, error) {
	var ws *unix.Winsize
	err := m.control(func(fd int) error {
		var err error
		ws, err = unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
		return err
	})
	if err == nil && ws == nil {
		err = errNoSize
	}
	return ws, err
}
