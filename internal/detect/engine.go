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
	"io"
	"slices"
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
	Classifications int
	// ScreenReads counts the classifications that read the screen; the
	// others (the sweep's, a timer's) found it unchanged since the last.
	ScreenReads      int
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
	// verdict is what manifest verdictOf read on the screen when fed was
	// verdictFed (verdictOf nil: none yet). The screen changes only by a
	// Feed or a Resize: the sweep's reclassification of an unchanged
	// screen reuses it, with no copy of the screen and no rule run.
	verdict    rules.Verdict
	verdictOf  *rules.Manifest
	verdictFed uint64

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

// ScreenPrompt is the rule that recognised the prompt the screen showed
// when last classified: "" when it shows none a blocked rule knows, even
// while a report says the program is blocked.
func (e *Engine) ScreenPrompt() string {
	if e.verdict.State != rules.Blocked {
		return ""
	}
	return e.verdict.Rule
}

// PromptShown is when the screen rules first saw the prompt now on
// screen; zero when they see none.
func (e *Engine) PromptShown() time.Time { return e.promptShown }

// Decision returns the current state and since when.
func (e *Engine) Decision() (combine.Decision, time.Time) { return e.cur, e.since }

// Records returns copies of the program's OSC 7501 status records.
func (e *Engine) Records() []status.Record { return e.store.Records() }

// RecordsVersion changes whenever the records do.
func (e *Engine) RecordsVersion() uint64 { return e.store.Version() }

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

// takeChanges hands the changes over to the caller, who owns them: the
// engine keeps no buffer between changes, which are rare next to its life.
func (e *Engine) takeChanges() []Change {
	out := e.changes
	e.changes = nil
	if len(out) == 0 {
		return nil
	}
	return slices.Clip(out)
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
	// Not kept for the next: events are rare next to output, and the
	// buffer would hold their texts (a notification's) until then.
	e.pending = nil
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

// MarkSeen says a person looked at the pane (attached, read its screen,
// answered it): done becomes idle, until another turn ends.
func (e *Engine) MarkSeen(now time.Time) []Change {
	e.doneUnseen = false
	return e.classify(now)
}
