package detect

import (
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/rules"
	"github.com/corral-dev/corral/internal/term"
)

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
