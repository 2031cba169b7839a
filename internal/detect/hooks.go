package detect

import (
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/combine"
)

// HookGrace is how long a hook's report stands against a screen whose
// rules say otherwise. Hooks are edges, not levels: they say when
// something began, and some endings fire nothing (Claude Code fires no
// hook after a refused prompt or an interrupted turn). So once the grace
// has passed, a screen rule that positively shows a different state ends
// the hook's report. A screen whose rules match nothing leaves it
// standing: that is when hooks matter.
const HookGrace = time.Second

type hookReport struct {
	state   combine.State
	kind    string
	message string
	at      time.Time
}

// Hook is one report from an agent's hook (or an ACP request).
type Hook struct {
	State   combine.State
	Kind    string
	Message string
	// Session is the conversation the report is about ("" when the
	// payload does not say). Reports about another conversation than the
	// pane's are counted and ignored.
	Session string
	// NewSession: a session started (or restarted, after /clear); its
	// conversation becomes the pane's.
	NewSession bool
	// Clear: the session ended; forget the hook's last word.
	Clear bool
	// Ignore: the report says nothing about the state; it is counted.
	Ignore bool
	// Reminder: the agent's notice that it still waits. Of the same state
	// and kind as the report standing, it confirms that report and keeps
	// its words, which are the more exact ("approve Bash: ls -la /tmp"
	// rather than "Claude needs your permission").
	Reminder bool
}

// ApplyHook records a report from an agent's hook and reclassifies.
func (e *Engine) ApplyHook(now time.Time, h Hook) []Change {
	if h.Ignore || (h.State == "" && !h.Clear) {
		e.counters.HooksIgnored++
		return nil
	}
	if h.Session != "" {
		switch {
		case h.NewSession || e.conversation == "":
			e.conversation = h.Session
		case h.Session != e.conversation:
			e.counters.HooksOtherConversation++
			return nil
		}
	}
	old := e.hook
	switch {
	case h.Clear:
		e.hook = nil
	case h.Reminder && old != nil && old.state == h.State && old.kind == h.Kind && old.message != "":
		old.at = now
	default:
		e.hook = &hookReport{state: h.State, kind: h.Kind, message: h.Message, at: now}
		if h.State == combine.Done {
			e.doneEdge = true
		}
	}
	return e.classify(now)
}

// hookOutlived reports whether the screen has shown, after the grace, a
// state that ends what the hook said.
func hookOutlived(h *hookReport, screen combine.State, now time.Time) bool {
	if screen == "" || now.Sub(h.at) < HookGrace {
		return false
	}
	switch h.state {
	case combine.Blocked:
		return screen != combine.Blocked // answered or refused
	case combine.Working:
		return screen == combine.Idle // interrupted
	case combine.Done, combine.Idle, combine.Error:
		return screen == combine.Working // a new turn the hooks did not report
	}
	return false
}

// interruptEnds reports whether an interrupt ended the turn a hook said
// was working: an Esc or Ctrl-C typed after the report (or just before
// it: Claude Code reports a submit that an Esc already stopped), and, the
// manifest's idle_confirm later, a screen that shows neither work nor a
// prompt. An agent stopped mid-answer may report nothing and redraw its
// input box in a form no rule knows (Claude Code puts the prompt back and
// drops its footer's hints).
func (e *Engine) interruptEnds(h *hookReport, screen combine.State, now time.Time) bool {
	return e.interruptedHook(h) && screen != combine.Working && screen != combine.Blocked && !now.Before(e.recheckAt(h))
}

// interruptedHook says whether an interrupt was typed after, or just
// before, a hook's working.
func (e *Engine) interruptedHook(h *hookReport) bool {
	return h.state == combine.Working && !e.interruptAt.IsZero() && e.interruptAt.After(h.at.Add(-interruptLead))
}

// recheckAt is when the state is looked at again after an interrupt.
func (e *Engine) recheckAt(h *hookReport) time.Time {
	from := e.interruptAt
	if h.at.After(from) {
		from = h.at
	}
	return from.Add(max(e.manifest.IdleConfirm, minRecheck))
}

// idleAfterInterrupt reports whether the screen's idle is an idle rule's
// match within InterruptWindow of an interrupt the person typed during
// the turn.
func (e *Engine) idleAfterInterrupt(next combine.Decision, in combine.Inputs, now time.Time) bool {
	return next.Source == combine.SourceScreen && in.Screen.State == combine.Idle && in.Screen.Rule != "" &&
		!e.interruptAt.IsZero() && !now.Before(e.interruptAt) && now.Sub(e.interruptAt) < InterruptWindow
}

// interruptLead is how long before a hook's working an interrupt still
// ends that turn (an Esc 0.26 s before Claude Code's UserPromptSubmit
// hook was seen live).
const interruptLead = 1500 * time.Millisecond

// minRecheck is the least wait after an interrupt before a hook's working
// gives way: the agent's own redraw comes first.
const minRecheck = 100 * time.Millisecond

// InterruptWindow is how long after a person's interrupt a turn's end is
// taken as theirs.
const InterruptWindow = 5 * time.Second

// IsInterrupt reports whether typed bytes stop a turn or refuse a prompt:
// Esc pressed on its own (once or twice), or Ctrl-C. An escape sequence
// (an arrow key) is not one.
func IsInterrupt(b []byte) bool {
	s := string(b)
	return s == "\x1b" || s == "\x1b\x1b" || strings.Contains(s, "\x03")
}

// NoteInterrupt says a person typed a key that stops a turn or refuses a
// prompt (Esc, Ctrl-C): a turn that ends within InterruptWindow ends idle,
// not done — they saw it end, they ended it.
func (e *Engine) NoteInterrupt(now time.Time) {
	e.interruptAt = now
	e.typed, e.taskAt = false, time.Time{}
}

// NoteSubmit says input was submitted (an Enter typed): an interrupt
// before it was about an earlier turn, not the one this starts.
// After typed text (NoteTyped) it is a task.
func (e *Engine) NoteSubmit(now time.Time) {
	if !e.interruptAt.IsZero() && !now.Before(e.interruptAt) {
		e.interruptAt = time.Time{}
	}
	e.noteTask(now)
}

// applyHookReport weighs the newest hook report against the program's own
// OSC 7501 report. The OSC 7501 record is a level the program keeps
// current; a hook is an edge. So a hook decides only when the program
// reports nothing itself, or when it is a newer prompt or failure the
// record has not caught up with (a missed prompt is the worst mistake). A
// hook the screen has outlived is dropped.
func (e *Engine) applyHookReport(in *combine.Inputs, h *hookReport, now time.Time) {
	if hookOutlived(h, in.Screen.State, now) || e.interruptEnds(h, in.Screen.State, now) {
		e.hook = nil
		return
	}
	hook := combine.Report{Present: true, Source: combine.SourceHook, State: h.state, Kind: h.kind, Message: h.message}
	if !in.Report.Present {
		in.Report = hook
		return
	}
	root, _ := e.store.Root()
	switch {
	case (h.state == combine.Blocked || h.state == combine.Error) && in.Report.State != h.state && !h.at.Before(root.Updated):
		in.Report = hook
	case h.state == combine.Blocked && in.Report.State == combine.Blocked && in.Report.Message == "":
		in.Report.Message = h.message // the program's report says no more than "blocked"
		if in.Report.Kind == "" {
			in.Report.Kind = h.kind
		}
	}
}

// Standing is what a next owner of the pane needs of its hooks: the
// newest report while it stands, and the conversation the hooks speak
// for. A daemon that hands a pane over keeps it; hooks are not said again.
type Standing struct {
	State        combine.State `json:"state,omitempty"`
	Kind         string        `json:"kind,omitempty"`
	Message      string        `json:"message,omitempty"`
	At           time.Time     `json:"at,omitzero"`
	Conversation string        `json:"conversation,omitempty"`
}

// Standing returns the hooks' standing report and conversation.
func (e *Engine) Standing() Standing {
	s := Standing{Conversation: e.conversation}
	if h := e.hook; h != nil {
		s.State, s.Kind, s.Message, s.At = h.state, h.kind, h.message, h.at
	}
	return s
}

// HookSurvivedReplay gives a hook report that outlived the replayed screen
// a fresh grace from now: the program is told to redraw its whole screen
// (SIGWINCH after a re-adoption), and a frame of that redraw caught half
// drawn must not end a report the finished screen agrees with. A report
// the replayed screen had already outlived is gone and stays gone.
func (e *Engine) HookSurvivedReplay(now time.Time) {
	if e.hook != nil && e.hook.at.Before(now) {
		e.hook.at = now
	}
}

// RestoreStanding puts back what Standing returned, before the engine
// classifies: the screen outlives the report as it would have (a report
// older than HookGrace gives way to a screen showing another state).
func (e *Engine) RestoreStanding(s Standing, now time.Time) {
	if s.Conversation != "" {
		e.conversation = s.Conversation
	}
	if s.State == "" {
		return
	}
	at := s.At
	if at.IsZero() || at.After(now) {
		at = now
	}
	e.hook = &hookReport{state: s.State, kind: s.Kind, message: s.Message, at: at}
}
