package pane

import (
	"errors"
	"sync"
	"time"
)

// outsideState is what a pane of an outside terminal keeps besides the
// rest: its program is not corral's child, and its output arrives through
// its Feed.
type outsideState struct {
	// endOnce makes the end (Ended or Detach, whichever comes first)
	// happen once.
	endOnce sync.Once
}

// ExitUnknown is the exit code of a program whose status nobody reported
// (a tmux pane's program is the tmux server's child, not corral's).
const ExitUnknown = -1

// Open makes a pane of a program that runs on an outside terminal (a tmux
// pane): corral watches it and types into it, but did not start it and
// does not end it. screen draws what the terminal shows now, on a blank
// terminal of its size; from then on the source hands the pane its
// output, size changes and end through the returned Feed, in order, from
// one goroutine at a time. pid is the program's process (its group leads
// the terminal's session). cfg's size gives way to the source's own.
func Open(cfg Config, src Source, pid int, screen []byte) (*Pane, *Feed, error) {
	if src == nil {
		return nil, nil, errors.New("open a pane: no terminal to watch")
	}
	if cols, rows, err := src.Size(); err == nil && CheckSize(cols, rows) == nil {
		cfg.Cols, cfg.Rows = cols, rows
	}
	if cfg.Cols == 0 && cfg.Rows == 0 {
		cfg.Cols, cfg.Rows = 80, 24
	}
	if err := CheckSize(cfg.Cols, cfg.Rows); err != nil {
		return nil, nil, err
	}
	p := newPane(cfg, src, nil, pid, time.Now())
	p.outside = &outsideState{}
	close(p.readDone) // nothing here reads a terminal
	now := time.Now()
	p.mu.Lock()
	p.replaying.Store(true) // what drew the screen asked nothing of corral
	p.queueLocked(p.engine.Feed(now, screen))
	p.replaying.Store(false)
	p.unlock()
	if pgrp, err := src.Foreground(); err == nil && pgrp > 0 {
		fg := foreground{pgrp: pgrp}
		fg.name, fg.argv = processInfo(pgrp)
		p.mu.Lock()
		p.sweepSeen, p.sweepName = pgrp, fg.name
		p.foregroundLocked(fg)
		p.unlock()
	}
	p.mu.Lock()
	p.queueLocked(p.engine.Classify(time.Now()))
	p.scheduleLocked()
	p.unlock()
	go p.sweepLoop()
	go p.deliverLoop()
	return p, &Feed{p: p}, nil
}

// Feed is how an outside source hands a pane what its terminal does.
type Feed struct{ p *Pane }

// Output feeds bytes the program wrote.
func (f *Feed) Output(b []byte) { f.p.feedOutside(b, false) }

// Redraw feeds a fresh drawing of the terminal after output was lost
// (the source fell behind): the screen is right again, and the queries the
// lost output held are not answered.
func (f *Feed) Redraw(screen []byte) { f.p.feedOutside(screen, true) }

func (p *Pane) feedOutside(b []byte, redraw bool) {
	if len(b) == 0 {
		return
	}
	p.feeding.Add(1)
	defer p.feeding.Add(-1)
	p.noteOutput()
	p.mu.Lock()
	if p.exited {
		p.unlock()
		return
	}
	if redraw {
		p.replaying.Store(true)
	}
	p.queueLocked(p.engine.Feed(time.Now(), b))
	if redraw {
		p.replaying.Store(false)
	}
	p.scheduleLocked()
	p.forwardLocked(b)
	p.unlock()
	p.kick()
}

// Resized says the terminal's size changed (the source's owner resized
// it).
func (f *Feed) Resized(cols, rows int) {
	p := f.p
	if CheckSize(cols, rows) != nil {
		return
	}
	p.mu.Lock()
	defer p.unlock()
	if p.exited || (p.cfg.Cols == cols && p.cfg.Rows == rows) {
		return
	}
	p.cfg.Cols, p.cfg.Rows = cols, rows
	p.engine.Resize(time.Now(), cols, rows)
	p.scheduleLocked()
}

// Ended says the program is gone (code: its exit status, or ExitUnknown).
func (f *Feed) Ended(code int) {
	p := f.p
	p.outside.endOnce.Do(func() {
		if !p.handing.CompareAndSwap(heldRunning, heldEnding) {
			return
		}
		p.ended(code)
	})
}

// detachOutside stops watching the terminal; its program runs on. The
// pane's state stays as it was (no exit is recorded) and Done is closed.
func (p *Pane) detachOutside() bool {
	detached := false
	p.outside.endOnce.Do(func() {
		if !p.handing.CompareAndSwap(heldRunning, heldDetaching) {
			return
		}
		detached = true
		p.mu.Lock()
		p.timer.Stop()
		paneClock.remove(&p.sweepAt)
		for w := range p.watchers {
			w.closeLocked("corral stopped watching the pane")
		}
		p.unlock()
		_ = p.src.Close()
		close(p.done)
	})
	return detached
}

// Outside reports whether the pane watches an outside terminal (one
// corral did not start), and the source's kind ("pty", "held", "tmux").
func (p *Pane) Outside() (bool, string) { return p.outside != nil, p.src.Kind() }
