package detect

import (
	"fmt"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/rules"
)

// KindStarting is the kind of a pane whose agent is starting.
const KindStarting = "starting"

// KindStart is the kind of the error of an agent that never got ready.
const KindStart = "start"

func hasIdleRule(m *rules.Manifest) bool {
	for _, r := range m.Rules {
		if r.State == rules.Idle {
			return true
		}
	}
	return false
}

func (e *Engine) startingDecision() combine.Decision {
	return combine.Decision{State: combine.Working, Kind: KindStarting, Source: combine.SourceDefault, Message: "starting " + e.agentName()}
}

// Starting says whether the agent has yet to draw its ready screen.
func (e *Engine) Starting() bool { return e.starting }

// applyStarting keeps a starting agent's pane working (kind starting)
// until it can take input: its ready screen (a screen rule saying idle)
// stays for the manifest's ready_settle, or it asks something (blocked: a
// trust or login prompt), fails, or exits. Starting is never a turn, so
// it never ends in done. An agent that draws no ready screen within the
// manifest's start_timeout is idle if a report or hook said so, and
// otherwise in error ("did not start").
func (e *Engine) applyStarting(next *combine.Decision, in combine.Inputs, now time.Time) {
	if in.Report.Present && (in.Report.State == combine.Idle || in.Report.State == combine.Done) {
		e.reportedIdle = true
	}
	switch {
	case next.State == combine.Blocked:
		// A trust or login prompt: blocked at once; once answered, the
		// agent is starting again (resumeStarting).
		e.starting, e.startPrompted = false, true
		return
	case next.Source == combine.SourceProcess, next.State == combine.Error, next.State == combine.Exited:
		e.starting = false
		return
	case in.Screen.State == combine.Idle:
		if e.readyAt.IsZero() {
			e.readyAt = now
		}
		if !now.Before(e.readyAt.Add(e.manifest.ReadySettle)) {
			e.starting = false
			*next = combine.Decision{State: combine.Idle, Source: combine.SourceScreen, Rule: in.Screen.Rule, Message: in.Screen.Message}
			return
		}
	default:
		e.readyAt = time.Time{}
	}
	if !now.Before(e.startEnd()) {
		e.starting = false
		if e.reportedIdle {
			*next = combine.Decision{State: combine.Idle, Source: in.Report.Source}
			return
		}
		*next = combine.Decision{State: combine.Error, Kind: KindStart, Source: combine.SourceDefault,
			Message: fmt.Sprintf("did not start: no ready screen within %v", e.manifest.StartTimeout)}
		return
	}
	*next = e.startingDecision()
}

func (e *Engine) startEnd() time.Time { return e.startFrom.Add(e.manifest.StartTimeout) }

// resumeStarting makes an agent whose startup prompt (a folder trust, a
// login) was answered read starting again, from now: its input box is not
// up yet.
func (e *Engine) resumeStarting(next combine.Decision, now time.Time) {
	if !e.startPrompted || e.starting || next.State == combine.Blocked {
		return
	}
	e.startPrompted = false
	if next.State == combine.Error || next.State == combine.Exited || next.Source == combine.SourceProcess {
		return
	}
	e.starting, e.startFrom, e.readyAt = true, now, time.Time{}
}
