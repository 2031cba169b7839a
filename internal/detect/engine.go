// Package detect turns one pane's output bytes into a state. It owns the
// pane's terminal, its OSC 7501 record store and its screen rules, and
// applies the combining policy on a clock the caller supplies: live panes
// pass the wall clock, replays pass the recording's timestamps, so timing
// rules behave the same in both.
//
// Classification is event-driven: fed bytes mark the screen dirty, and the
// screen is classified on the trailing edge of a quiet window (or after
// MaxWait under a continuous stream). A program's own report is applied at
// once. The caller calls Tick at Deadline.
package detect

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/rules"
	"github.com/corral-dev/corral/internal/status"
	"github.com/corral-dev/corral/internal/term"
)

// Default timing.
const (
	DefaultQuiet   = 20 * time.Millisecond
	DefaultMaxWait = 100 * time.Millisecond
)

// Config configures an Engine.
type Config struct {
	Cols, Rows int
	Rules      *rules.Set
	// Agent forces a manifest by name; empty recognises the agent from the
	// screen and title, using the generic manifest until then.
	Agent string
	// ScreenOnly ignores the program's own reports: what a screen-only
	// detector would say. It is Signals = SignalScreen.
	ScreenOnly bool
	// Signals limits the signals that may decide, to score one kind of
	// signal against another; zero means all of them.
	Signals Signals
	Quiet   time.Duration
	MaxWait time.Duration
	// Replies receives query answers for the program (DA1, cursor position).
	Replies io.Writer
	// MarkDone turns a turn's end seen on the screen (working → idle) into
	// done until MarkSeen: a live pane's "finished, nobody has looked".
	// Replays leave it off: a recording has nobody to look.
	MarkDone bool
	// Started, when set, is when the pane's program was started: a pane
	// whose agent is known (Agent, or a manifest's process) reads working,
	// kind starting, until the agent is ready (see starting).
	Started time.Time
}

// KindStarting is the kind of a pane whose agent is starting.
const KindStarting = "starting"

// KindStart is the kind of the error of an agent that never got ready.
const KindStart = "start"

// Signals is a set of signal kinds.
type Signals uint8

const (
	SignalScreen  Signals = 1 << iota // the screen rules
	SignalOSC7501                     // the program's OSC 7501 reports
	SignalHooks                       // hook and ACP reports
	AllSignals    = SignalScreen | SignalOSC7501 | SignalHooks
)

// Change is one state change.
type Change struct {
	At       time.Time
	Previous combine.Decision
	Decision combine.Decision
	// Held: Decision is a permission prompt held back for a policy's
	// decision (SetDecisionWindow), not the pane's state; the pane reads
	// Previous until NoteDecided, NoteUndecided or the window's end.
	Held bool
}

// Counters count what the engine saw and refused.
type Counters struct {
	Classifications  int
	StatusReports    int
	StatusDiscarded  int
	Bells            int
	Notifications    int
	LastNotification string
	// HooksIgnored counts hook reports that say nothing about the state
	// (unknown events, the agent's hidden requests).
	HooksIgnored int
	// HooksOtherConversation counts hook reports about a conversation
	// that is not the pane's (a nested agent inheriting its environment).
	HooksOtherConversation int
}

// Engine is one pane's detector. It is not safe for concurrent use: its
// owner serialises calls (the pane's read loop).
type Engine struct {
	cfg  Config
	term *term.Terminal

	// The decision window (SetDecisionWindow): a permission prompt is held
	// back for window while a policy may still decide it; held is when the
	// current one was first seen, decidedUntil how long a decided one
	// reads as working, decidedText what decided it.
	window       time.Duration
	held         time.Time
	heldNext     combine.Decision // the prompt held back
	released     bool
	decidedUntil time.Time
	decidedText  string
	store        *status.Store
	manifest     *rules.Manifest
	fixed        bool // manifest chosen by the caller or recognised: stop looking

	pending []term.Event // tapped during the current Feed

	// fed counts Feeds and resizes; identifiedAt is its value when the
	// screen was last matched against the agents' patterns.
	fed, identifiedAt uint64

	dirty       bool
	firstDirty  time.Time
	lastFeed    time.Time
	cur         combine.Decision
	since       time.Time
	idlePending bool // working → idle seen, waiting for confirmation
	idleAt      time.Time

	process combine.Process // what the process table says
	hook    *hookReport     // the newest hook report, if any
	// conversation is the session the pane's hooks speak for: the first
	// one a report named, or the newest that started.
	conversation string

	// doneUnseen: a turn ended and nobody has looked since. doneEdge: a
	// report said a turn ended (a done hook, an OSC 7501 root record that
	// became done) since the last classification. Done is raised only by
	// a turn's end, never by a done report that is merely still standing.
	doneUnseen bool
	doneEdge   bool
	// interruptAt is when a person last typed a key that stops a turn
	// (Esc, Ctrl-C) or refuses a prompt: the turn end that follows is
	// their own doing, seen as it happens.
	interruptAt time.Time
	// typed: text was typed since the last Enter; taskAt: when a task was
	// submitted to the agent, while its screen has not shown it (see
	// applyTask).
	typed  bool
	taskAt time.Time
	// msgFallback: the current block's message was made up from the
	// screen because no signal said what it asks; a real one replaces it.
	msgFallback bool
	// promptShown is when the screen rules first saw the current prompt
	// (zero while they see none).
	promptShown time.Time

	// starting: the agent has not drawn its ready screen yet; readyAt is
	// when the screen began to show it (zero while it does not), and
	// reportedIdle says a report or hook said idle meanwhile.
	starting      bool
	startFrom     time.Time // when the start, or the resumed start, began
	startPrompted bool      // a prompt came while starting: resume after it
	readyAt       time.Time
	reportedIdle  bool
	// classifiedAt is when the screen was last classified.
	classifiedAt time.Time

	progress      int // OSC 9;4 value, -1 none
	progressState int

	counters Counters
	changes  []Change
}

// New returns an engine with a fresh terminal. Close it when done.
func New(cfg Config) *Engine {
	if cfg.Quiet <= 0 {
		cfg.Quiet = DefaultQuiet
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultMaxWait
	}
	if cfg.ScreenOnly {
		cfg.Signals = SignalScreen
	}
	if cfg.Signals == 0 {
		cfg.Signals = AllSignals
	}
	e := &Engine{cfg: cfg, store: status.NewStore(0), progress: -1,
		cur: combine.Decision{State: combine.Idle, Source: combine.SourceDefault}}
	e.term = term.New(term.Options{Cols: cfg.Cols, Rows: cfg.Rows, Replies: cfg.Replies,
		OnEvent: func(ev term.Event) { e.pending = append(e.pending, ev) }})
	if cfg.Agent != "" {
		if m, ok := cfg.Rules.ByName(cfg.Agent); ok {
			e.manifest, e.fixed = m, true
		}
	}
	if e.manifest == nil {
		e.manifest = cfg.Rules.Generic()
	}
	// Only an agent whose manifest knows its ready screen has a starting
	// phase: without an idle rule it could never end but in error.
	if !cfg.Started.IsZero() && e.manifest.Name != rules.Generic && hasIdleRule(e.manifest) {
		e.starting, e.startFrom = true, cfg.Started
		e.cur = e.startingDecision()
		e.since = cfg.Started
	}
	return e
}

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

// backgroundRecords counts the program's child records still at work (a
// background shell, a sub-agent: Claude Code reports them with an id).
func (e *Engine) backgroundRecords() int {
	n := 0
	for _, r := range e.store.Records() {
		if r.ID != "" && (r.State == status.Working || r.State == status.Blocked) {
			n++
		}
	}
	return n
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

// Close releases the terminal.
func (e *Engine) Close() { e.term.Close() }

// Terminal returns the pane's terminal (for snapshots and resizes).
func (e *Engine) Terminal() *term.Terminal { return e.term }

// Manifest returns the manifest in use.
func (e *Engine) Manifest() *rules.Manifest { return e.manifest }

// SetManifest switches the manifest (the foreground program changed, or
// the rules were reloaded) and reclassifies at now.
func (e *Engine) SetManifest(m *rules.Manifest, now time.Time) []Change {
	e.manifest, e.fixed = m, true
	return e.classify(now)
}

// PromptShown is when the screen rules first saw the prompt now on
// screen; zero when they see none.
func (e *Engine) PromptShown() time.Time { return e.promptShown }

// Decision returns the current state and since when.
func (e *Engine) Decision() (combine.Decision, time.Time) { return e.cur, e.since }

// Records returns copies of the program's OSC 7501 status records.
func (e *Engine) Records() []status.Record { return e.store.Records() }

// Progress returns the OSC 9;4 progress (-1 when none).
func (e *Engine) Progress() (state, value int) { return e.progressState, e.progress }

// Counters returns a copy of the counters.
func (e *Engine) Counters() Counters {
	c := e.counters
	c.StatusDiscarded = e.store.Discarded
	return c
}

// Feed writes program output at now and returns the changes it caused.
func (e *Engine) Feed(now time.Time, p []byte) []Change {
	e.changes = e.changes[:0]
	if len(p) == 0 {
		return nil
	}
	_, _ = e.term.Write(p)
	e.fed++
	if !e.dirty {
		e.dirty, e.firstDirty = true, now
	}
	e.lastFeed = now
	if e.applyEvents(now) {
		// The program spoke for itself: no reason to wait.
		e.classifyLocked(now)
	}
	return e.takeChanges()
}

// Resize changes the terminal size and marks the screen dirty.
func (e *Engine) Resize(now time.Time, cols, rows int) {
	e.term.Resize(cols, rows)
	e.fed++
	if !e.dirty {
		e.dirty, e.firstDirty = true, now
	}
	e.lastFeed = now
}

// Deadline is when Tick must next be called; ok is false when nothing is
// waiting.
func (e *Engine) Deadline() (at time.Time, ok bool) {
	if e.dirty {
		at, ok = e.lastFeed.Add(e.cfg.Quiet), true
		if capAt := e.firstDirty.Add(e.cfg.MaxWait); capAt.Before(at) {
			at = capAt
		}
	}
	if e.idlePending {
		confirm := e.idleAt.Add(e.manifest.IdleConfirm)
		if !ok || confirm.Before(at) {
			at, ok = confirm, true
		}
	}
	more := []time.Time{}
	if h := e.hook; h != nil && e.interruptedHook(h) && e.classifiedAt.Before(e.recheckAt(h)) {
		more = append(more, e.recheckAt(h))
	}
	if !e.taskAt.IsZero() {
		more = append(more, e.taskEnd())
	}
	if e.starting {
		more = append(more, e.startEnd())
		if !e.readyAt.IsZero() {
			more = append(more, e.readyAt.Add(e.manifest.ReadySettle))
		}
	}
	for _, d := range append([]time.Time{e.holdEnd(), e.decidedUntil}, more...) {
		if !d.IsZero() && (!ok || d.Before(at)) {
			at, ok = d, true
		}
	}
	return at, ok
}

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

// Tick classifies if a deadline has passed.
func (e *Engine) Tick(now time.Time) []Change {
	at, ok := e.Deadline()
	if !ok || now.Before(at) {
		return nil
	}
	return e.classify(now)
}

// Classify classifies now, whatever the deadlines: before typing into a
// pane, its state must be current.
func (e *Engine) Classify(now time.Time) []Change { return e.classify(now) }

func (e *Engine) classify(now time.Time) []Change {
	e.changes = e.changes[:0]
	e.classifyLocked(now)
	return e.takeChanges()
}

func (e *Engine) takeChanges() []Change {
	if len(e.changes) == 0 {
		return nil
	}
	out := make([]Change, len(e.changes))
	copy(out, e.changes)
	return out
}

// applyEvents handles tapped sequences; it reports whether the program's
// own status records changed.
func (e *Engine) applyEvents(now time.Time) bool {
	changed := false
	for _, ev := range e.pending {
		switch ev.Kind {
		case term.EventStatus:
			e.counters.StatusReports++
			if ev.Oversize {
				e.store.CountDiscarded()
				continue
			}
			wasDone := e.rootState() == status.Done
			if ok, _ := e.store.Apply(ev.Text, now); ok {
				changed = true
				if !wasDone && e.rootState() == status.Done {
					e.doneEdge = true
				}
			}
		case term.EventPromptMark:
			if ev.Mark == 'A' && e.store.EndTransient() {
				changed = true
			}
		case term.EventReset:
			if e.store.Reset() {
				changed = true
			}
		case term.EventProgress:
			e.progressState, e.progress = ev.ProgressState, ev.Progress
			if ev.ProgressState == term.ProgressRemove {
				e.progress = -1
			}
		case term.EventBell:
			e.counters.Bells++
		case term.EventNotify:
			e.counters.Notifications++
			e.counters.LastNotification = ev.Text
		}
	}
	e.pending = e.pending[:0]
	return changed
}

// rootState is the OSC 7501 root record's state, "" when there is none.
func (e *Engine) rootState() status.State {
	if r, ok := e.store.Root(); ok {
		return r.State
	}
	return ""
}

// SetProcess records what the process table says (the pane exited, the
// agent exited back to its shell) and reclassifies. When a process ends,
// the program's working and blocked records end with it.
func (e *Engine) SetProcess(now time.Time, p combine.Process) []Change {
	if p == e.process {
		return nil
	}
	if (p.PaneExited && !e.process.PaneExited) || (p.AgentExited && !e.process.AgentExited) {
		e.store.EndTransient()
		e.hook = nil // the agent that reported is gone
	}
	e.process = p
	return e.classify(now)
}

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
	if h.Clear {
		e.hook = nil
	} else {
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

// MarkSeen says a person looked at the pane (attached, read its screen,
// answered it): done becomes idle, until another turn ends.
func (e *Engine) MarkSeen(now time.Time) []Change {
	e.doneUnseen = false
	return e.classify(now)
}

func (e *Engine) classifyLocked(now time.Time) {
	e.dirty = false
	e.classifiedAt = now
	e.counters.Classifications++
	snap := e.term.Snapshot()
	scr := rules.Screen{Lines: snap.Lines, Title: snap.Title}
	if !e.fixed && e.fed != e.identifiedAt {
		// Only new output can make an agent recognisable: the sweep's
		// reclassification of an unchanged screen does not look again.
		e.identifiedAt = e.fed
		if m := e.cfg.Rules.IdentifyScreen(scr); m != nil {
			e.manifest, e.fixed = m, true
		}
	}
	verdict := e.manifest.Classify(scr)
	if verdict.State != rules.Blocked {
		e.promptShown = time.Time{}
	} else if e.promptShown.IsZero() {
		e.promptShown = now
	}
	in := combine.Inputs{}
	if verdict.Rule != "" && e.cfg.Signals&SignalScreen != 0 {
		in.Screen = combine.Screen{State: combine.State(verdict.State), Kind: verdict.Kind, Rule: verdict.Rule, Message: verdict.Message}
	}
	if root, ok := e.store.Root(); ok && e.cfg.Signals&SignalOSC7501 != 0 {
		in.Report = combine.Report{Present: true, Source: combine.SourceOSC7501, State: combine.State(root.State), Kind: string(root.Kind), Message: root.Msg}
	}
	if h := e.hook; h != nil && e.cfg.Signals&SignalHooks != 0 {
		e.applyHookReport(&in, h, now)
	}
	in.Process = e.process
	next := combine.Decide(in)
	e.resumeStarting(next, now)
	if e.starting {
		e.applyStarting(&next, in, now)
	}
	e.applyTask(&next, now)
	wasHeld := e.heldNext.State != ""
	if e.holdForDecision(&next, now) {
		if !wasHeld {
			e.changes = append(e.changes, Change{At: now, Previous: e.cur, Decision: next, Held: true})
		}
		return
	}

	// working or blocked → idle from the screen needs the screen to keep
	// saying so for IdleConfirm: a spinner frame can blank for a moment,
	// and an answered prompt is erased before the work it allowed is drawn.
	// A program's own report needs no confirmation; nothing delays a block.
	// Nor does an idle rule's positive match just after the person's own
	// Esc or Ctrl-C: they stopped the turn, and the agent's input box is
	// back (waiting again made an interrupt read as working for up to
	// twice IdleConfirm: once for the hook, once for the screen).
	if (e.cur.State == combine.Working || e.cur.State == combine.Blocked) && !e.awaitingWork() && next.State == combine.Idle &&
		(next.Source == combine.SourceScreen || next.Source == combine.SourceDefault) && e.manifest.IdleConfirm > 0 &&
		!e.idleAfterInterrupt(next, in, now) {
		if !e.idlePending {
			e.idlePending, e.idleAt = true, now
			return
		}
		if now.Sub(e.idleAt) < e.manifest.IdleConfirm {
			return
		}
	}
	e.idlePending = false
	next = e.applyDone(next, now)
	if (next.State == combine.Done || next.State == combine.Idle) && next.Source == combine.SourceOSC7501 && next.Message == "" {
		if n := e.backgroundRecords(); n > 0 {
			next.Message = combine.Background(n)
		}
	}
	fallback := false
	if next.State == combine.Blocked {
		// The agent's own words for the request (a hook, OSC 7501) say
		// more than a rule's: they replace the screen's, whenever they come.
		reported := in.Report.Present && in.Report.State == combine.Blocked && in.Report.Message != ""
		if e.cur.State == combine.Blocked && next.Source == combine.SourceScreen && e.cur.Kind == next.Kind &&
			(e.cur.Rule == next.Rule || e.cur.Rule == "") && e.cur.Message != "" && (!e.msgFallback || next.Message == "") &&
			!reported {
			// The same prompt is still on screen: keep the words it was
			// first reported with, whichever signal gave them.
			next.Message, fallback = e.cur.Message, e.msgFallback
		}
		if next.Message == "" {
			// No signal said what it asks (a report without text, a rule
			// without a message): the screen's question line says it.
			next.Message, fallback = promptLine(snap.Lines, next.Kind, in.Screen.State == combine.Blocked), true
		}
	}
	e.msgFallback = fallback
	// A submitted task that the agent now shows is the same turn at work:
	// the pane's kind and message change, and no event says so twice.
	taskShown := e.cur.State == combine.Working && e.cur.Kind == KindSubmitted && next.State == combine.Working
	if combine.Changed(e.cur, next) && !taskShown {
		e.changes = append(e.changes, Change{At: now, Previous: e.cur, Decision: next})
		e.cur, e.since = next, now
		return
	}
	// Same state: keep the freshest explanation.
	e.cur = next
}

// applyDone turns a finished turn into done until someone looks: a program
// that reports a turn's end says so itself; with MarkDone, the screen going
// from working to idle says so too. Once seen, done reads as idle until
// another turn ends: a done report that is only still standing (re-sent,
// or read again at the next classification) raises nothing.
func (e *Engine) applyDone(next combine.Decision, now time.Time) combine.Decision {
	edge := e.doneEdge
	e.doneEdge = false
	if next.Source == combine.SourceProcess {
		return next
	}
	inTurn := (e.cur.State == combine.Working || e.cur.State == combine.Blocked) && !e.awaitingWork()
	interrupted := !e.interruptAt.IsZero() && now.Sub(e.interruptAt) < InterruptWindow
	if inTurn && next.State != combine.Working && next.State != combine.Blocked {
		e.interruptAt = time.Time{} // the turn the interrupt was for is over
	}
	turnEnded := func() {
		if interrupted {
			e.interruptAt = time.Time{} // the person's own interrupt: seen
			return
		}
		e.doneUnseen = true
	}
	switch next.State {
	case combine.Working, combine.Blocked:
		e.doneUnseen = false
	case combine.Done:
		if edge || inTurn {
			turnEnded()
		}
		if !e.doneUnseen {
			next.State = combine.Idle
		}
	case combine.Idle:
		if !e.cfg.MarkDone || (next.Source != combine.SourceScreen && next.Source != combine.SourceDefault) {
			break
		}
		if e.cur.State == combine.Working && !e.awaitingWork() {
			turnEnded() // a turn ended on screen
		}
		if e.doneUnseen && (e.cur.State == combine.Working || e.cur.State == combine.Done) {
			next.State = combine.Done
		}
	}
	return next
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

// Resume carries over, after a classification, what the previous owner
// knew of the current state: when it began and, for a prompt still on
// screen, the words it was first reported with. Nothing is carried over
// when the engine decides another state or kind than last.
func (e *Engine) Resume(last combine.Decision, since time.Time) {
	if e.cur.State != last.State || e.cur.Kind != last.Kind || last.State == "" {
		return
	}
	if !since.IsZero() && since.Before(e.since) {
		e.since = since
	}
	_, reported := e.store.Root()
	if e.cur.State == combine.Blocked && last.Message != "" && e.cur.Source == combine.SourceScreen && e.hook == nil && !reported &&
		(last.Rule == "" || e.cur.Rule == last.Rule) {
		// The same prompt, whose words came from a signal not said again.
		e.cur.Message, e.msgFallback = last.Message, false
	}
}
