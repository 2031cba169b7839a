package autoapprove

import (
	"fmt"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/approval"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/eventlog"
)

// DecideHook decides a PermissionRequest hook's request and returns the
// decision for the agent, or nil to leave it to the person. Each decision
// is an event naming the file and rule.
func (a *Approver) DecideHook(p Pane, req agents.Permission) *api.HookDecision {
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
		p.NoteUndecided() // a prompt held for the decision is the person's now
		return nil
	}
	p.NoteDecided(ap.Text) // its dialog, drawn or to come, is not a block
	a.record(p, ap, now)
	if ap.Decision == "allow" {
		return &api.HookDecision{Behavior: "allow"}
	}
	return &api.HookDecision{Behavior: "deny", Message: fmt.Sprintf("denied by corral policy %s rule %d", ap.Policy, ap.Rule)}
}

// Takes is told of every recorded state change of the pane. It says
// whether ev is a permission block the policy has decided or is deciding
// (not to be notified): the agent's own moment of "blocked" just after a
// rule decided its hook's request, or an OSC 7501 report naming the
// request whole, which a rule then answers by the manifest's keys (in a
// goroutine of its own; a request left to the person after all is
// notified then, through Events).
func (a *Approver) Takes(p Pane, ev eventlog.Event) bool {
	if !Concerns(ev) {
		return false
	}
	a.mu.Lock()
	recent := !a.decided.IsZero() && ev.Time.Sub(a.decided) < decidedQuiet && a.last != nil &&
		a.last.Decision != "person" && approval.SameRequest(ev.Message, a.last.Input)
	leftToYou := !a.left.IsZero() && ev.Time.Sub(a.left) < decidedQuiet && a.last != nil &&
		a.last.Decision == "person" && approval.SameRequest(ev.Message, a.last.Input)
	a.mu.Unlock()
	if recent {
		return true
	}
	if leftToYou {
		return false // held and left to the person already: notify at once
	}
	ap, input, ok := a.decideReport(p, ev.Agent, ev.Time)
	if !ok {
		return false
	}
	go a.answerReport(p, ap, input, ev)
	return true
}

// Concerns says whether a recorded change is one a policy may take: a
// permission block. The daemon asks before it looks for the pane's
// approver.
func Concerns(ev eventlog.Event) bool {
	return ev.State == string(combine.Blocked) && ev.Kind == "permission"
}

// Held is told of a permission prompt the pane holds back for its policy
// (the decision window), first seen at: a request the policy decides
// from the agent's report is answered while the pane still reads working,
// so it never reads blocked; any other is released at once, blocked for
// the person. The agent's hooks decide their own (DecideHook).
func (a *Approver) Held(p Pane, at time.Time) {
	agent := p.Info().Agent
	if p.HooksDecide(agent) {
		return
	}
	ap, input, ok := a.decideReport(p, agent, at)
	if !ok {
		p.NoteUndecided()
		return
	}
	go a.answerHeld(p, ap, input)
}

// decideReport decides the permission request the agent's own OSC 7501
// report names. ok is false when it is not decided for the person: the
// agent's hooks decide, no report names it (screen only), it was not read
// whole, or no rule decides it (then Latest says so, with at as its
// time).
func (a *Approver) decideReport(p Pane, agent string, at time.Time) (ap api.Approval, input string, ok bool) {
	if p.HooksDecide(agent) {
		return ap, "", false
	}
	// The agent's own report of the request, whichever signal decided
	// the state: the root OSC 7501 record.
	msg := ""
	for _, r := range p.Info().Records {
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

// answerHeld answers a held prompt once the screen shows the request
// whole (the prompt region the screen rule matched) and the agent can
// take keys; otherwise the prompt is the person's.
func (a *Approver) answerHeld(p Pane, ap api.Approval, input string) {
	deadline := time.Now().Add(a.drawWait)
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
	a.record(p, ap, now)
}

// answerReport carries out a rule's decision on a reported request by
// typing the manifest's answer, once the prompt is on screen and shows the
// request's input; a prompt not seen, or not showing it, is left to the
// person. A report's words are a claim: the prompt itself — the region of
// the screen rule that recognised it, not the rest of the screen — must
// show the input whole, as whole lines of its own (a program could print
// "$ ls" above a dialog for "rm -rf DIR" and report "ls").
// A request left to the person after all is notified then.
func (a *Approver) answerReport(p Pane, ap api.Approval, input string, ev eventlog.Event) {
	deadline := time.Now().Add(a.drawWait)
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
			a.events.Notify(ev)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	now := time.Now()
	a.noteDecided(ap, now)
	if _, err := p.AnswerPrompt(approval.AnswerChoice(ap)); err != nil {
		a.setLast(approval.LeftToPerson(ap, "could not answer ("+err.Error()+")"))
		a.events.Notify(ev)
		return
	}
	a.record(p, ap, now)
}
