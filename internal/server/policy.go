package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/approval"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/config"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/safefile"
)

// SourcePolicy is the event source of a policy's decision.
const SourcePolicy = "policy"

// approver is a pane's policy: an allow or deny rule decides a request the
// agent gave whole; anything else is left to the person, never denied on
// their behalf and never allowed from a guess.
type approver struct {
	policy *headless.Policy
	text   []byte // the policy's text, kept in the pane table
	mu     sync.Mutex
	last   *api.Approval
	// decided is when a rule last decided a request; left when a request
	// was last left to the person.
	decided, left time.Time
}

// decidedQuiet is how long after a rule decided a request the pane's
// permission block is not notified: Claude Code draws its dialog while
// the hook runs and reports it blocked for a moment after the decision.
const decidedQuiet = 3 * time.Second

// policyTakes is told of every recorded state change. It says whether
// ev is a permission block the pane's policy has decided or is deciding
// (not to be notified): the agent's own moment of "blocked" just after a
// rule decided its hook's request, or an OSC 7501 report naming the
// request whole, which a rule then answers by the manifest's keys.
func (s *Server) policyTakes(id string, ev eventlog.Event) bool {
	if ev.State != string(combine.Blocked) || ev.Kind != "permission" {
		return false
	}
	e, err := s.findPane(id) // a job's policy is its run's (headless.Options.Policy)
	if err != nil {
		return false
	}
	a := e.Ext.approve.Load()
	if a == nil {
		return false
	}
	a.mu.Lock()
	recent := !a.decided.IsZero() && ev.Time.Sub(a.decided) < decidedQuiet && a.last != nil &&
		a.last.Decision != "person" && approval.SameRequest(ev.Message, a.last.Input)
	a.mu.Unlock()
	if recent {
		return true
	}
	a.mu.Lock()
	leftToYou := !a.left.IsZero() && ev.Time.Sub(a.left) < decidedQuiet && a.last != nil &&
		a.last.Decision == "person" && approval.SameRequest(ev.Message, a.last.Input)
	a.mu.Unlock()
	if leftToYou {
		return false // held and left to the person already: notify at once
	}
	ap, input, ok := s.decideReport(e, a, ev.Agent, ev.Time)
	if !ok {
		return false
	}
	go s.answerReport(e, a, ap, input, ev)
	return true
}

// decideReport decides, by the pane's policy, the permission request the
// agent's own OSC 7501 report names. ok is false when it is not decided
// for the person: the agent's hooks decide (Claude Code's), no report
// names it (screen only), it was not read whole, or no rule decides it
// (then a.last says so, with at as its time).
func (s *Server) decideReport(e *entry, a *approver, agent string, at time.Time) (ap api.Approval, input string, ok bool) {
	// The agent's hooks decide where they are in force: answering its
	// report as well would type keys into whatever comes next.
	if in, _ := e.Integration(agent); in == "claude-code" {
		return ap, "", false
	}
	// The agent's own report of the request, whichever signal decided
	// the state: the root OSC 7501 record.
	msg := ""
	for _, r := range e.P.Info().Records {
		if r.ID == "" && r.State == "blocked" && r.Kind == "permission" {
			msg = r.Msg
		}
	}
	if msg == "" {
		return ap, "", false // screen-only: never decided for the person
	}
	req, whole := approval.ReportedRequest(msg)
	// "./..." may be a whole Go package pattern or a cut: the screen tells.
	dots := !whole && req.Input != "" && strings.HasSuffix(req.Input, "...") && len(msg) < approval.MaxReportMsg
	if dots {
		req.Whole, whole = true, true
	}
	ap = approval.Decide(a.policy, req)
	if !whole {
		ap = api.Approval{Decision: "person", Policy: a.policy.Source, Tool: req.Tool, Input: approval.ClipInput(req.Input),
			Text: "the request was not read whole (" + approval.ClipText(msg) + "): left to you"}
	}
	ap.Time = at.UTC().Format(eventlog.TimeFormat)
	if ap.Decision == "person" {
		a.leave(ap, at)
		return ap, "", false
	}
	return ap, req.Input, true
}

// setLast records the newest decision.
func (a *approver) setLast(ap api.Approval) {
	a.mu.Lock()
	a.last = &ap
	a.mu.Unlock()
}

// noteDecided records a rule's decision, as it is typed.
func (a *approver) noteDecided(ap api.Approval, now time.Time) {
	a.mu.Lock()
	a.last, a.decided = &ap, now
	a.mu.Unlock()
}

// leave records that a request is the person's.
func (a *approver) leave(ap api.Approval, at time.Time) {
	a.mu.Lock()
	a.last, a.left = &ap, at
	a.mu.Unlock()
}

// policyHeld is told of a permission prompt the pane holds back for its
// policy (the decision window): a request the policy decides from the
// agent's report is answered while the pane still reads working, so it
// never reads blocked; any other is released at once, blocked for the
// person. Claude Code's hooks decide their own (decidePermission).
func (s *Server) policyHeld(id string, c detect.Change) {
	e, err := s.findPane(id)
	if err != nil {
		return
	}
	p, a := e.P, e.Ext.approve.Load()
	if a == nil {
		p.NoteUndecided()
		return
	}
	agent := p.Info().Agent
	if in, _ := e.Integration(agent); in == "claude-code" {
		return
	}
	ap, input, ok := s.decideReport(e, a, agent, c.At)
	if !ok {
		p.NoteUndecided()
		return
	}
	go s.answerHeld(e, p, a, ap, input)
}

// answerHeld answers a held prompt once the screen shows the request
// whole (the prompt region the screen rule matched) and the agent can
// take keys; otherwise the prompt is the person's.
func (s *Server) answerHeld(e *entry, p *pane.Pane, a *approver, ap api.Approval, input string) {
	deadline := time.Now().Add(PromptDrawWait)
	for {
		h, ok := p.HeldPrompt()
		if !ok {
			return // answered, gone, or released: no longer held
		}
		now := time.Now()
		if !h.Shown.IsZero() && approval.ShowsWhole(h.Region, input) {
			if ready := h.Shown.Add(h.Settle); now.Before(ready) {
				time.Sleep(ready.Sub(now))
				continue
			}
			break
		}
		if now.After(deadline) {
			a.leave(approval.LeftToPerson(ap, "the prompt on screen does not show "+approval.ClipText(input)+" whole"), now)
			p.NoteUndecided()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	now := time.Now()
	a.noteDecided(ap, now)
	if _, err := p.AnswerHeld(approval.AnswerChoice(ap), ap.Text); err != nil {
		a.leave(approval.LeftToPerson(ap, "could not answer ("+err.Error()+")"), now)
		p.NoteUndecided()
		return
	}
	s.recordDecision(e, ap, now)
}

// answerReport carries out a rule's decision on a reported request by
// typing the manifest's answer, once the prompt is on screen and shows the
// request's input; a prompt not seen, or not showing it, is left to the
// person. A report's words are a claim: the prompt itself — the region of
// the screen rule that recognised it, not the rest of the screen — must
// show the input whole, as whole lines of its own (a program could print
// "$ ls" above a dialog for "rm -rf DIR" and report "ls").
// A request left to the person after all is notified then.
func (s *Server) answerReport(e *entry, a *approver, ap api.Approval, input string, ev eventlog.Event) {
	p := e.P
	deadline := time.Now().Add(PromptDrawWait)
	for {
		in := p.Info()
		if in.Decision.State != combine.Blocked || in.Decision.Kind != "permission" {
			return // answered meanwhile
		}
		if region, ok := p.PromptRegion(); ok && !in.PromptShown.IsZero() && approval.ShowsWhole(region, input) {
			break
		}
		if time.Now().After(deadline) {
			a.setLast(approval.LeftToPerson(ap, "the prompt on screen does not show "+approval.ClipText(input)+" whole"))
			s.notify.Event(ev)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	now := time.Now()
	a.noteDecided(ap, now)
	if _, err := answerPane(e, approval.AnswerChoice(ap)); err != nil {
		a.setLast(approval.LeftToPerson(ap, "could not answer ("+err.Error()+")"))
		s.notify.Event(ev)
		return
	}
	s.recordDecision(e, ap, now)
}

// policyFor is the policy a new pane gets: the run's own, or config.toml's
// [panes] policy, or none.
func (s *Server) policyFor(req api.RunRequest) (*approver, error) {
	if req.Policy != "" {
		p, err := headless.ParsePolicy(req.PolicySource, []byte(req.Policy))
		if err != nil {
			return nil, err
		}
		return &approver{policy: p, text: []byte(req.Policy)}, nil
	}
	file := s.opts.Config.Panes.Policy
	if req.NoPolicy || file == "" {
		return nil, nil
	}
	file = expandHome(file)
	if !filepath.IsAbs(file) {
		file = filepath.Join(filepath.Dir(config.ConfigPath()), file)
	}
	text, err := safefile.Read(file, headless.MaxPolicyBytes)
	if err != nil {
		err = fmt.Errorf("policy %s: %w", file, err)
	}
	var p *headless.Policy
	if err == nil {
		p, err = headless.ParsePolicy(file, text)
	}
	if err != nil {
		return nil, fmt.Errorf("config.toml's [panes] policy: %w (fix it, or run with --no-policy)", err)
	}
	return &approver{policy: p, text: text}, nil
}

// decidePermission decides a PermissionRequest hook's request by the
// pane's policy and returns the decision for the agent, or nil to leave
// it to the person. Each decision is an event naming the file and rule.
func (s *Server) decidePermission(e *entry, rep agents.Report, payload []byte) *api.HookDecision {
	req, ok := agents.ParsePermission(payload)
	switch {
	case ok && req.Question:
		opts := req.Options
		e.Ext.question.Store(&opts)
	case ok || (!rep.Ignore && rep.State != combine.Blocked):
		e.Ext.question.Store(nil) // another request, or the agent went on
	}
	a := e.Ext.approve.Load()
	if a == nil || !ok {
		return nil
	}
	ap := approval.Decide(a.policy, req)
	now := time.Now()
	ap.Time = now.UTC().Format(eventlog.TimeFormat)
	a.mu.Lock()
	a.last = &ap
	if ap.Decision != "person" {
		a.decided = now
	}
	a.mu.Unlock()
	if ap.Decision == "person" {
		e.P.NoteUndecided() // a prompt held for the decision is the person's now
		return nil
	}
	e.P.NoteDecided(ap.Text) // its dialog, drawn or to come, is not a block
	s.recordDecision(e, ap, now)
	if ap.Decision == "allow" {
		return &api.HookDecision{Behavior: "allow"}
	}
	return &api.HookDecision{Behavior: "deny", Message: fmt.Sprintf("denied by corral policy %s rule %d", ap.Policy, ap.Rule)}
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	return p
}

// recordDecision logs a rule's decision as an event naming the policy
// file and rule, in the pane's state at that moment.
func (s *Server) recordDecision(e *entry, ap api.Approval, now time.Time) {
	in := e.P.Info()
	d := in.Decision
	ev := eventlog.Event{Time: now, Pane: in.ID, Name: e.Name, Agent: in.Agent, State: string(d.State), Kind: d.Kind,
		Message: ap.Text, Source: SourcePolicy, Rule: fmt.Sprintf("%s rule %d", ap.Policy, ap.Rule),
		Previous: string(d.State), PreviousKind: d.Kind}
	s.logEvent(ev)
}

func (a *approver) latest() *api.Approval {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last == nil {
		return nil
	}
	c := *a.last
	return &c
}

// DecisionWindow is how long a new permission prompt of a pane with a
// policy waits for the decision before the pane reads blocked: Claude
// Code may draw its dialog before its PermissionRequest hook reaches
// corral (0.6–1.5 s later seen, on a loaded machine), and a request its
// OSC 7501 report names is answered once the screen shows it whole. A
// request the policy decides never reads blocked; one it leaves to the
// person reads blocked as soon as that is known (policyHeld).
const DecisionWindow = 2 * time.Second

// holdForPolicy gives a pane with a policy the decision window.
func holdForPolicy(p *pane.Pane, a *approver) {
	if a != nil {
		p.SetDecisionWindow(DecisionWindow)
	}
}
