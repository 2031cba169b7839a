package pane

import (
	"time"

	"github.com/corral-dev/corral/internal/detect"
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
	p.compactIdleLocked(time.Now())
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
