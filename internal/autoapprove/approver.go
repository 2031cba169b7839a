// Package autoapprove carries out a pane's approval policy: it decides the
// permission requests an agent's hook or its own OSC 7501 report names
// (by internal/approval), types the decision into the prompt, logs it as an
// event, and keeps the pane's permission block from being notified while
// the policy decides it.
//
// An allow or deny rule decides a request the agent gave whole; anything
// else is left to the person, never denied on their behalf and never
// allowed from a guess.
//
// The package keeps no state of its own: the daemon makes one Approver per
// pane that has a policy, and hands it the pane (Pane) on each call and
// where its decisions go (Events) when it makes it.
package autoapprove

import (
	"fmt"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/corral-dev/corral/internal/pane"
)

// SourcePolicy is the event source of a policy's decision.
const SourcePolicy = "policy"

// DecisionWindow is how long a new permission prompt of a pane with a
// policy waits for the decision before the pane reads blocked: Claude
// Code may draw its dialog before its PermissionRequest hook reaches
// corral (0.6–1.5 s later seen, on a loaded machine), and a request its
// OSC 7501 report names is answered once the screen shows it whole. A
// request the policy decides never reads blocked; one it leaves to the
// person reads blocked as soon as that is known (Approver.Held).
const DecisionWindow = 2 * time.Second

// PromptDrawWait bounds how long a decision waits for the prompt to show
// the request whole before it leaves the request to the person: as long
// as an answer waits for its prompt.
const PromptDrawWait = pane.PromptDrawWait

// decidedQuiet is how long after a rule decided a request the pane's
// permission block is not notified: Claude Code draws its dialog while
// the hook runs and reports it blocked for a moment after the decision.
const decidedQuiet = 3 * time.Second

// Pane is what an approver needs of its pane. *pane.Pane has the most of
// it; HooksDecide and Name are the daemon's to give.
type Pane interface {
	Info() pane.Info
	PromptRegion() (string, bool)
	HeldPrompt() (pane.HeldPrompt, bool)
	AnswerHeld(choice, text string) (string, error)
	NoteDecided(text string)
	NoteUndecided()
	// Name is the pane's name in the daemon, for its events.
	Name() string
	// HooksDecide says whether the agent's hooks are in force and decide
	// its requests themselves (Claude Code's PermissionRequest hook):
	// answering its report as well would type keys into whatever comes
	// next.
	HooksDecide(agent string) bool
	// AnswerPrompt types choice into the pane's blocked prompt once the
	// prompt can take it, as `corral answer` does (pane.Pane.AnswerPrompt).
	AnswerPrompt(choice string) (string, error)
}

// Events is where an approver's decisions go.
type Events interface {
	// Log numbers a decision's event, writes it to the event log and
	// publishes it.
	Log(ev eventlog.Event)
	// Notify tells the notifier of a permission block the policy took
	// and then left to the person after all.
	Notify(ev eventlog.Event)
}

// Approver is one pane's policy, and what it last decided.
//
// Its lock guards the last decision and the times of the last decisions
// only: it is taken alone, never while calling the pane or Events, so an
// Approver can be called from a pane's delivery of its changes. Held and
// Takes never wait: what waits for the screen runs in a goroutine of its
// own.
type Approver struct {
	policy *headless.Policy
	text   []byte // the policy's text, kept in the pane table
	events Events
	// drawWait is PromptDrawWait (shorter in tests).
	drawWait time.Duration

	mu   sync.Mutex
	last *api.Approval
	// decided is when a rule last decided a request; left when a request
	// was last left to the person.
	decided, left time.Time
}

// New makes a pane's approver of a compiled policy and its text.
func New(p *headless.Policy, text []byte, events Events) *Approver {
	return &Approver{policy: p, text: text, events: events, drawWait: PromptDrawWait}
}

// Parse compiles a policy's text (source names it in errors) into a
// pane's approver.
func Parse(source string, text []byte, events Events) (*Approver, error) {
	p, err := headless.ParsePolicy(source, text)
	if err != nil {
		return nil, err
	}
	return New(p, text, events), nil
}

// Source names the policy (its file, or the run's).
func (a *Approver) Source() string { return a.policy.Source }

// Text is the policy as it was read.
func (a *Approver) Text() []byte { return a.text }

// Latest is the newest decision, nil before the first.
func (a *Approver) Latest() *api.Approval {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last == nil {
		return nil
	}
	c := *a.last
	return &c
}

// setLast records the newest decision.
func (a *Approver) setLast(ap api.Approval) {
	a.mu.Lock()
	a.last = &ap
	a.mu.Unlock()
}

// noteDecided records a rule's decision, as it is typed.
func (a *Approver) noteDecided(ap api.Approval, now time.Time) {
	a.mu.Lock()
	a.last, a.decided = &ap, now
	a.mu.Unlock()
}

// leave records that a request is the person's.
func (a *Approver) leave(ap api.Approval, at time.Time) {
	a.mu.Lock()
	a.last, a.left = &ap, at
	a.mu.Unlock()
}

// record logs a rule's decision as an event naming the policy file and
// rule, in the pane's state at that moment.
func (a *Approver) record(p Pane, ap api.Approval, now time.Time) {
	in := p.Info()
	d := in.Decision
	a.events.Log(eventlog.Event{Time: now, Pane: in.ID, Name: p.Name(), Agent: in.Agent, State: string(d.State), Kind: d.Kind,
		Message: ap.Text, Source: SourcePolicy, Rule: fmt.Sprintf("%s rule %d", ap.Policy, ap.Rule),
		Previous: string(d.State), PreviousKind: d.Kind})
}
