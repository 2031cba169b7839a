package pane

import "github.com/corral-dev/corral/internal/rules"

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
