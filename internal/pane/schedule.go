package pane

import (
	"time"

	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/osproc"
)

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

// The sweep is the safety net: every Sweep, whatever the screen did, the
// clock reclassifies the pane and reads its foreground process. What it
// nets is near in time to something that happened: a hook's grace, an
// interrupt's window, a program started in the foreground after the
// output that asked for it. A pane in which nothing has happened for
// SettleAfter (no output, input, report or change) has nothing left to
// net but a program that changes its foreground without a word, so its
// sweep slows to QuietSweep; the first thing that happens in it brings
// the sweep back to Sweep at once (wakeSweep). A thousand idle panes cost
// a wake-up every QuietSweep instead of a thousand reads a second.
const (
	DefaultSettleAfter = 30 * time.Second
	DefaultQuietSweep  = 10 * time.Second
)

// setPaces fills in the sweep's defaults.
func (c *Config) setPaces() {
	if c.Sweep <= 0 {
		c.Sweep = time.Second
	}
	if c.SettleAfter <= 0 {
		c.SettleAfter = DefaultSettleAfter
	}
	if c.QuietSweep <= 0 {
		c.QuietSweep = DefaultQuietSweep
	}
	c.QuietSweep = max(c.QuietSweep, c.Sweep)
}

// sweepLoop starts the safety net.
func (p *Pane) sweepLoop() {
	p.stir()
	p.armSweep(time.Now())
}

// nextSweep is the next multiple of every after now: the sweeps of every
// pane with the same interval fall due together, one wake-up of the clock
// for all of them.
func nextSweep(now time.Time, every time.Duration) time.Time {
	return now.Truncate(every).Add(every)
}

// settled reports whether nothing has happened in the pane for SettleAfter.
func (p *Pane) settled(now time.Time) bool {
	last := max(p.outputAt.Load(), p.stirredAt.Load())
	return now.Sub(time.Unix(0, last)) >= p.cfg.SettleAfter
}

// armSweep puts the next sweep on the clock at the pace the pane calls for.
// sweepSlow is set before the pane's times are read, and wakeSweep writes
// a time before it reads sweepSlow: of a sweep slowing and a wake-up at
// once, one sees the other.
func (p *Pane) armSweep(now time.Time) {
	p.sweepMu.Lock()
	defer p.sweepMu.Unlock()
	p.sweepSlow.Store(true)
	every := p.cfg.QuietSweep
	if !p.settled(now) {
		p.sweepSlow.Store(false)
		every = p.cfg.Sweep
	}
	paneClock.set(&p.sweepAt, nextSweep(now, every))
}

// stir says something other than output happened in the pane (input, a
// report, a size, a change of state or foreground).
func (p *Pane) stir() {
	p.stirredAt.Store(time.Now().UnixNano())
	p.wakeSweep()
}

// noteOutput says the program wrote.
func (p *Pane) noteOutput() {
	p.outputAt.Store(time.Now().UnixNano())
	p.wakeSweep()
}

// wakeSweep brings a slowed sweep back to its pace; when it is not slowed,
// as while anything happens, it is one atomic load.
func (p *Pane) wakeSweep() {
	if !p.sweepSlow.Load() {
		return
	}
	p.sweepMu.Lock()
	defer p.sweepMu.Unlock()
	if !p.sweepSlow.Load() {
		return
	}
	select {
	case <-p.done:
		return // gone: its sweep is off the clock
	default:
	}
	p.sweepSlow.Store(false)
	paneClock.set(&p.sweepAt, nextSweep(time.Now(), p.cfg.Sweep))
}

// fireSweep runs on the clock.
func (p *Pane) fireSweep() {
	select {
	case <-p.done:
		return
	default:
	}
	p.armSweep(time.Now())
	pgrp, err := p.src.Foreground()
	var name string
	switch {
	case err != nil || pgrp <= 0:
		pgrp = 0
	case pgrp != p.sweepSeen:
		name = osproc.Name(pgrp)
		p.sweepSeen, p.sweepName = pgrp, name
	case !p.sweepSlow.Load():
		// The same group, looked at again while the pane is busy: its
		// leader may have exec'd since (a shell's job is the foreground
		// before it execs its program, a wrapper execs the agent), and a
		// name read before that stayed for the group's life. The name
		// alone: /proc's comm never waits on the process.
		if name = osproc.Name(pgrp); name == "" || name == p.sweepName {
			pgrp = 0
		} else {
			p.sweepName = name
		}
	default:
		pgrp = 0
	}
	if pgrp == 0 && p.mu.tryLock() {
		p.sweepLocked(foreground{})
		return
	}
	// The command line's read can wait on the other process, and the pane
	// may be busy: neither holds the clock.
	go func() {
		fg := foreground{pgrp: pgrp, name: name}
		if pgrp != 0 {
			fg.argv, _ = osproc.Cmdline(pgrp)
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
			p.stir()
			p.foregroundLocked(fg)
		}
		p.queueLocked(p.engine.Classify(time.Now()))
		p.scheduleLocked()
	}
	p.checkpointLocked(CheckpointEvery, 0)
	p.compactIdleLocked(time.Now())
	p.unlock()
	p.kick()
}

func (p *Pane) queueLocked(cs []detect.Change) {
	if len(cs) > 0 {
		p.stir()
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
