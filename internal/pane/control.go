package pane

import (
	"bytes"
	"fmt"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/rules"
)

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
// dialog a moment later. Output the program wrote that the pane has not
// read yet (a daemon starved of the processor reads late), or has read and
// not yet fed to its screen, is not quiet: it is waited for, fed, and
// counted from. Settled, the screen shows all the program wrote, but for
// frames on their way from a holder that reads the terminal itself.
func (p *Pane) AwaitSettled(since time.Time, limit time.Duration) bool {
	settle := max(EnterSettle, p.snap.Load().key.manifest.AnswerSettle)
	deadline := time.Now().Add(limit)
	pending, _ := p.src.(pendingSource)
	for {
		output := p.outputAt.Load()
		last := time.Unix(0, output)
		if since.After(last) {
			last = since
		}
		quiet := time.Since(last)
		wait := settle - quiet
		if quiet >= settle {
			// In the order the output goes: in the kernel, then read
			// and being fed (the poller's reader counts itself before
			// it reads), then fed, its time in outputAt.
			n := 0
			if pending != nil {
				var err error
				if n, err = pending.Pending(); err != nil {
					n = 0 // a terminal that cannot say is not waited on
				}
			}
			if n == 0 && p.feeding.Load() == 0 {
				if p.outputAt.Load() == output {
					return true
				}
				continue // read since: quiet counts from it
			}
			wait = 5 * time.Millisecond // until the pane has read and fed it
		}
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
	p.stir()
	now := time.Now()
	p.queueLocked(p.engine.Classify(now))
	return now, nil
}

// Answer types the manifest's keystrokes for choice ("yes", "always",
// "no", "cancel" or an option number). It refuses unless the pane is
// blocked, classifying first, and — when the manifest has rules for its
// prompts — unless the screen shows one of them: the keys of one dialog
// typed into another the rules do not know (a login, a warning, a mode
// switch) may do anything, so corral never guesses. A caller that got
// the block from a report waits for the dialog first (it is drawn a
// moment after).
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
	// The prompt a rule recognises on screen may take its own keys.
	rule, known := promptRule(m, d.Rule, p.engine.ScreenPrompt())
	if !known {
		p.unlock()
		p.kick()
		what := d.Message
		if what == "" {
			what = "no words"
		}
		return "", fmt.Errorf("the pane is blocked (%s), but %w (none of %s's prompt rules matches it): "+
			"look at it with corral screen, then type its keys with corral send, or attach", what, ErrUnknownPrompt, m.Name)
	}
	keys, ok := m.KeysFor(rule, choice)
	if !ok {
		p.unlock()
		p.kick()
		return "", fmt.Errorf("%w %q for %s; it knows %s", ErrNoAnswer, choice, m.Name, answerNames(m, rule))
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
			p.stir()
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
		p.stir()
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
	p.stir()
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
	if p.snap.Load().key.exited {
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
