package pane

import (
	"time"

	"github.com/corral-dev/corral/internal/rules"
)

// PromptAnswers is what the pane's current prompt takes: the named
// answers its rule or manifest defines (yes, always, no, cancel) and
// whether it takes option numbers. Nothing when the pane does not answer
// within LockWait.
func (p *Pane) PromptAnswers() (names []string, options bool) {
	if !p.mu.lockWithin(LockWait) {
		return nil, false
	}
	m := p.engine.Manifest()
	d, _ := p.engine.Decision()
	p.mu.Unlock()
	for _, n := range []string{rules.AnswerYes, rules.AnswerAlways, rules.AnswerNo, rules.AnswerCancel} {
		if _, ok := m.KeysFor(d.Rule, n); ok {
			names = append(names, n)
		}
	}
	_, options = m.KeysFor(d.Rule, "1")
	return names, options
}

// SetDecisionWindow makes a new permission prompt wait, at most d, for the
// pane's policy before the pane reads blocked (see detect).
func (p *Pane) SetDecisionWindow(d time.Duration) {
	p.mu.Lock()
	p.engine.SetDecisionWindow(d)
	p.mu.Unlock()
}

// NoteDecided says the pane's policy decided the permission request in
// view (text: the decision); NoteUndecided that it is the person's.
func (p *Pane) NoteDecided(text string) { p.noteDecision(text, true) }

func (p *Pane) NoteUndecided() { p.noteDecision("", false) }

func (p *Pane) noteDecision(text string, decided bool) {
	p.mu.Lock()
	if !p.exited {
		if decided {
			p.queueLocked(p.engine.NoteDecided(time.Now(), text))
		} else {
			p.queueLocked(p.engine.NoteUndecided(time.Now()))
		}
		p.scheduleLocked()
	}
	p.mu.Unlock()
	p.kick()
}
