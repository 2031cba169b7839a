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
	"sync"
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

// screenLines holds the arrays a classification copies the screen's rows
// into, between classifications: a spinning pane is classified at each
// frame, and a new array each time was a quarter of a spinning daemon's
// garbage. Nothing a classification decides keeps the array: rules read
// the rows and keep strings. The pool lets go of its arrays when the heap
// is collected.
var screenLines = sync.Pool{New: func() any { return new([]string) }}

func (e *Engine) classifyLocked(now time.Time) {
	e.dirty = false
	e.classifiedAt = now
	e.counters.Classifications++
	var snap *term.Snapshot // the screen, copied when something reads it
	var lines *[]string     // snap's rows, in an array of screenLines
	defer func() {
		if lines != nil {
			clear(*lines) // the pool keeps no row text alive
			*lines = (*lines)[:0]
			screenLines.Put(lines)
		}
	}()
	screen := func() rules.Screen {
		if snap == nil {
			lines = screenLines.Get().(*[]string)
			s := e.term.SnapshotInto(*lines)
			*lines = s.Lines
			snap = &s
		}
		return rules.Screen{Lines: snap.Lines, Title: snap.Title}
	}
	if !e.fixed && e.fed != e.identifiedAt {
		// Only new output can make an agent recognisable: the sweep's
		// reclassification of an unchanged screen does not look again.
		e.identifiedAt = e.fed
		if m := e.cfg.Rules.IdentifyScreen(screen()); m != nil {
			e.manifest, e.fixed = m, true
		}
	}
	if e.verdictOf != e.manifest || e.verdictFed != e.fed {
		e.verdict, e.verdictOf, e.verdictFed = e.manifest.Classify(screen()), e.manifest, e.fed
		e.counters.ScreenReads++
	}
	verdict := e.verdict
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
			next.Message, fallback = promptLine(screen().Lines, next.Kind, in.Screen.State == combine.Blocked), true
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
