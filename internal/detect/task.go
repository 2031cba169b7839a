package detect

import (
	"time"

	"github.com/corral-dev/corral/internal/combine"
)

// KindSubmitted is the kind of a working pane whose agent was given a task
// (text, then Enter) and has not yet drawn any sign of it: opencode keeps
// its home screen, the task still in its input box, for seconds while it
// opens a session.
const KindSubmitted = "submitted"

// NoteTyped says text was typed into the pane (not an Enter, not an
// interrupt): an Enter that follows submits a task.
func (e *Engine) NoteTyped() { e.typed = true }

// noteTask starts the manifest's turn_start window when a task is
// submitted to an agent waiting for one.
func (e *Engine) noteTask(now time.Time) {
	task := e.typed
	e.typed = false
	// Without screen rules nothing could show the work; without an idle
	// rule (a shell) nothing says the agent waits for a task.
	if task && e.manifest.TurnStart > 0 && e.cfg.Signals&SignalScreen != 0 && !e.starting && hasIdleRule(e.manifest) && (e.cur.State == combine.Idle || e.cur.State == combine.Done) {
		e.taskAt = now
		if !e.dirty { // classify soon: the screen may not change at all
			e.dirty, e.firstDirty, e.lastFeed = true, now, now
		}
	}
}

// applyTask reads the idle screen of an agent that was just given a task
// as working, until the agent shows the work (or a prompt, an error, an
// exit, or speaks for itself through a report), or until turn_start has
// passed with nothing shown: then it is idle again, and no turn ended.
func (e *Engine) applyTask(next *combine.Decision, now time.Time) {
	if e.taskAt.IsZero() {
		return
	}
	shown := next.State != combine.Idle && next.State != combine.Done
	if shown || e.reportedSince(e.taskAt) || !now.Before(e.taskEnd()) {
		e.taskAt = time.Time{}
		return
	}
	*next = combine.Decision{State: combine.Working, Kind: KindSubmitted, Source: combine.SourceDefault,
		Message: "task submitted; waiting for " + e.agentName() + " to start it"}
}

// reportedSince reports whether the agent itself said, after t, that a
// turn ended or asks something (done, blocked, error): a turn too quick
// for the screen. A report that stands from before, an idle one re-sent,
// or a working one the decision does not follow yet (Claude Code's
// prompt hook comes before its own OSC 7501 record says working) says
// nothing against the task.
func (e *Engine) reportedSince(t time.Time) bool {
	ends := func(s combine.State) bool { return s != combine.Idle && s != combine.Working }
	if root, ok := e.store.Root(); ok && e.cfg.Signals&SignalOSC7501 != 0 && root.Updated.After(t) && ends(combine.State(root.State)) {
		return true
	}
	h := e.hook
	return h != nil && e.cfg.Signals&SignalHooks != 0 && h.at.After(t) && ends(h.state)
}

func (e *Engine) taskEnd() time.Time { return e.taskAt.Add(e.manifest.TurnStart) }

// agentName is the manifest's name for people.
func (e *Engine) agentName() string {
	if e.manifest.Display != "" {
		return e.manifest.Display
	}
	return e.manifest.Name
}

// awaitingWork reports whether the current state is a working that is no
// turn of the agent's yet: it is starting, or a task was just submitted.
func (e *Engine) awaitingWork() bool {
	return e.cur.State == combine.Working && (e.cur.Kind == KindStarting || e.cur.Kind == KindSubmitted)
}
