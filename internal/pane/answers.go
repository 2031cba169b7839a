package pane

import (
	"fmt"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/rules"
)

// PromptAnswers is what the pane's current prompt takes: the named
// answers its rule or manifest defines (yes, always, no, cancel) and
// whether it takes option numbers. A prompt the manifest's rules do not
// recognise on screen takes none (see Answer).
func (p *Pane) PromptAnswers() (names []string, options bool) {
	pr := p.Prompt()
	return pr.Answers, pr.Options
}

// Prompt is what a blocked pane's prompt takes.
type Prompt struct {
	// Rule is the rule whose keys answer it ("" for the manifest's).
	Rule string
	// Answers are the built-in answers it takes (yes, always, no,
	// cancel), Options whether it takes option numbers, Choices its
	// rule's own.
	Answers []string
	Options bool
	Choices []rules.Choice
}

// Prompt is what a blocked pane's prompt takes now (see PromptAnswers),
// its rule's own choices with it: nothing when no rule recognises it.
func (p *Pane) Prompt() (pr Prompt) {
	s := p.snap.Load()
	m := s.key.manifest
	rule, known := promptRule(m, s.key.decision.Rule, s.key.screenPrompt)
	if !known {
		return Prompt{}
	}
	pr.Rule = rule
	pr.Answers, pr.Options = builtinAnswers(m, rule)
	pr.Choices = m.ChoicesFor(rule)
	return pr
}

// builtinAnswers are the named answers a prompt (its rule's, "" the
// manifest's) takes, and whether it takes option numbers.
func builtinAnswers(m *rules.Manifest, rule string) (names []string, options bool) {
	for _, n := range []string{rules.AnswerYes, rules.AnswerAlways, rules.AnswerNo, rules.AnswerCancel} {
		if _, ok := m.KeysFor(rule, n); ok {
			names = append(names, n)
		}
	}
	_, options = m.KeysFor(rule, "1")
	return names, options
}

// promptRule is the rule whose keys answer a blocked pane's prompt: the
// one recognising the prompt on screen (screenPrompt) when the manifest
// has rules for its prompts — known false when none does — and otherwise
// the rule that decided the block.
func promptRule(m *rules.Manifest, decided, screenPrompt string) (rule string, known bool) {
	if !m.RecognisesPrompts() {
		return decided, true
	}
	return screenPrompt, screenPrompt != ""
}

// SetDecisionWindow makes a new permission prompt wait, at most d, for the
// pane's policy before the pane reads blocked (see detect).
func (p *Pane) SetDecisionWindow(d time.Duration) {
	p.mu.Lock()
	p.engine.SetDecisionWindow(d)
	p.unlock()
}

// NoteDecided says the pane's policy decided the permission request in
// view (text: the decision); NoteUndecided that it is the person's.
func (p *Pane) NoteDecided(text string) { p.noteDecision(text, true) }

func (p *Pane) NoteUndecided() { p.noteDecision("", false) }

func (p *Pane) noteDecision(text string, decided bool) {
	p.mu.Lock()
	if !p.exited {
		p.stir()
		if decided {
			p.queueLocked(p.engine.NoteDecided(time.Now(), text))
		} else {
			p.queueLocked(p.engine.NoteUndecided(time.Now()))
		}
		p.scheduleLocked()
	}
	p.unlock()
	p.kick()
}

// HeldPrompt is a permission prompt held back for the pane's policy.
type HeldPrompt struct {
	Decision combine.Decision
	// Region is the text of the prompt region the screen rule matched
	// ("" when the screen shows no prompt a rule recognised).
	Region string
	// Shown is when the screen first showed it; Settle how long the agent
	// needs after that before it takes keys.
	Shown  time.Time
	Settle time.Duration
}

// HeldPrompt returns the permission prompt held back for the pane's policy, if
// one is.
func (p *Pane) HeldPrompt() (HeldPrompt, bool) {
	s := p.snap.Load()
	d, m, shown := s.key.held, s.key.manifest, s.key.promptShown
	if d.State == "" {
		return HeldPrompt{}, false
	}
	h := HeldPrompt{Decision: d, Shown: shown, Settle: m.AnswerSettle}
	if d.Source == combine.SourceScreen && d.Rule != "" {
		snap := p.term.Snapshot()
		h.Region, _ = m.RegionText(d.Rule, rules.Screen{Lines: snap.Lines, Title: snap.Title})
	}
	return h, true
}

// AnswerHeld answers the permission prompt held back for the pane's policy
// with choice, and notes the decision (text): the pane reads working
// (approved), never blocked. It refuses when no prompt is held any more
// (answered, gone, or the window ended and it reads blocked).
func (p *Pane) AnswerHeld(choice, text string) (string, error) {
	now, err := p.lockClassified()
	if err != nil {
		return "", err
	}
	d, ok := p.engine.Held()
	if !ok {
		p.unlock()
		p.kick()
		return "", fmt.Errorf("%w (no prompt waits for the policy any more)", ErrNotBlocked)
	}
	m := p.engine.Manifest()
	keys, ok := m.KeysFor(d.Rule, choice)
	if !ok {
		p.unlock()
		p.kick()
		return "", fmt.Errorf("%w %q for %s; it knows %s", ErrNoAnswer, choice, m.Name, answerNames(m, d.Rule))
	}
	p.queueLocked(p.engine.NoteDecided(now, text))
	if choice == rules.AnswerNo || choice == rules.AnswerCancel {
		p.engine.NoteInterrupt(now)
	}
	p.scheduleLocked()
	p.unlock()
	p.kick()
	return keys, p.enqueue([]byte(keys), InputWait)
}

// PromptDrawWait bounds how long AnswerPrompt waits for the prompt it
// answers to be on screen.
const PromptDrawWait = 1500 * time.Millisecond

// AnswerPrompt is Answer once the prompt can take the keys. An agent's own
// report of a prompt (a PermissionRequest hook, an OSC 7501 "blocked")
// comes before the dialog that reads the keys exists, and a dialog just
// drawn may not read keys yet (Claude Code drops them for a moment): keys
// typed then are lost, or land in the input box. So while the pane is
// blocked, it waits until the screen has shown the prompt for the
// manifest's answer_settle — at most PromptDrawWait for the prompt to
// appear; a block whose dialog no rule recognises by then is refused
// (ErrUnknownPrompt).
func (p *Pane) AnswerPrompt(choice string) (string, error) {
	start := time.Now()
	for {
		k := &p.snap.Load().key
		if k.decision.State != combine.Blocked {
			break // Answer refuses it
		}
		now := time.Now()
		if !k.promptShown.IsZero() {
			if ready := k.promptShown.Add(k.manifest.AnswerSettle); now.Before(ready) {
				time.Sleep(ready.Sub(now))
			}
			break
		}
		if now.Sub(start) > PromptDrawWait {
			break
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-p.done:
			return "", ErrExited
		}
	}
	return p.Answer(choice)
}
