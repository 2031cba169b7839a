package detect

import (
	"time"

	"github.com/corral-dev/corral/internal/combine"
)

// SourcePolicy is the source of a state a policy's decision made.
const SourcePolicy combine.Source = "policy"

// SetDecisionWindow makes a new permission prompt wait, at most d, for a
// policy's decision before the pane reads blocked (0: never). Only for a
// pane whose policy decides its agent's hook requests: the agent may draw
// its dialog before its hook reports the request.
func (e *Engine) SetDecisionWindow(d time.Duration) { e.window = d }

// NoteDecided says a policy decided the permission request in view: the
// prompt, drawn or still to come, reads working (kind approved) for a
// window, and is blocked only if it is still there after it.
func (e *Engine) NoteDecided(now time.Time, text string) []Change {
	e.decidedUntil, e.decidedText = now.Add(max(e.window, decidedFor)), text
	e.released = false
	return e.classify(now)
}

// NoteUndecided says the request is the person's: a prompt held back is
// blocked now.
func (e *Engine) NoteUndecided(now time.Time) []Change {
	e.released = true
	e.decidedUntil = time.Time{}
	return e.classify(now)
}

// decidedFor is how long a decided prompt reads as working at least: the
// agent draws its dialog while its hook runs and takes it down after.
const decidedFor = 2 * time.Second

// Held returns the permission prompt held back for a policy's decision,
// if one is.
func (e *Engine) Held() (combine.Decision, bool) {
	return e.heldNext, e.heldNext.State != ""
}

func (e *Engine) holdEnd() time.Time {
	if e.held.IsZero() || e.released {
		return time.Time{}
	}
	return e.held.Add(e.window)
}

// holdForDecision applies the decision window to next: a prompt a policy
// decided reads working, one it may still decide keeps the pane as it was
// (it reports true), and one past the window, or released, is blocked.
func (e *Engine) holdForDecision(next *combine.Decision, now time.Time) bool {
	if !e.decidedUntil.IsZero() && !now.Before(e.decidedUntil) {
		// A decided prompt still there after its time is not held again.
		e.decidedUntil, e.released = time.Time{}, true
	}
	e.heldNext = combine.Decision{}
	permission := next.State == combine.Blocked && next.Kind == "permission"
	if !permission {
		e.held, e.released = time.Time{}, false
		return false
	}
	if !e.decidedUntil.IsZero() {
		*next = combine.Decision{State: combine.Working, Kind: "approved", Source: SourcePolicy, Message: e.decidedText}
		return false
	}
	if e.window <= 0 || e.cur.State == combine.Blocked || e.released {
		return false
	}
	if e.held.IsZero() {
		e.held = now
	}
	if now.Before(e.held.Add(e.window)) {
		e.heldNext = *next
		return true
	}
	e.released = true // the window is over: blocked, and no deadline left
	return false
}
