package detect

import (
	"testing"
	"testing/fstest"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/rules"
)

func hook(state combine.State, kind, msg string) Hook {
	return Hook{State: state, Kind: kind, Message: msg}
}

func TestHookReports(t *testing.T) {
	e, _ := newToy(t)
	cs := e.ApplyHook(at(0), hook(combine.Blocked, "permission", "approve Bash: ls"))
	if states(cs) != "blocked@0s" || cs[0].Decision.Source != combine.SourceHook || cs[0].Decision.Message != "approve Bash: ls" {
		t.Fatalf("hook blocked: %+v", cs)
	}
	// A screen matching no rule leaves the hook's block standing.
	e.Feed(at(100), []byte("some redraw"))
	if cs := tickUntil(e, at(5000)); len(cs) != 0 {
		t.Fatalf("block dropped on an unknown screen: %s", states(cs))
	}
	// The prompt was refused: nothing from the hook, but the screen shows
	// work again after the grace. The block ends.
	e.Feed(at(6000), []byte("\r\x1b[K⠋ esc to interrupt"))
	if got := states(tickUntil(e, at(6100))); got != "working@6.02s" {
		t.Fatalf("stuck hook block: %s", got)
	}
	// Bad and foreign reports are counted, never a state.
	e.ApplyHook(at(6200), Hook{Ignore: true})
	e.ApplyHook(at(6300), Hook{})
	if c := e.Counters(); c.HooksIgnored != 2 {
		t.Fatalf("ignored hooks %d", c.HooksIgnored)
	}
}

// The agent's reminder that it waits (Claude Code's Notification, about
// 6 s after its PermissionRequest) confirms the prompt standing and keeps
// its exact words: no second event. A reminder with nothing like it
// standing is a report like any other.
func TestHookReminderKeepsTheWords(t *testing.T) {
	e, _ := newToy(t)
	e.ApplyHook(at(0), hook(combine.Blocked, "permission", "approve Bash: ls -la /tmp"))
	reminder := Hook{State: combine.Blocked, Kind: "permission", Message: "Claude needs your permission", Reminder: true}
	if cs := e.ApplyHook(at(6000), reminder); len(cs) != 0 {
		t.Fatalf("a reminder of the standing prompt changed the pane: %+v", cs)
	}
	if d, _ := e.Decision(); d.State != combine.Blocked || d.Message != "approve Bash: ls -la /tmp" {
		t.Fatalf("after the reminder: %+v", d)
	}
	// A question is another prompt: the reminder of it is its report.
	question := Hook{State: combine.Blocked, Kind: "question", Message: "Pick one", Reminder: true}
	if cs := e.ApplyHook(at(7000), question); len(cs) != 1 || cs[0].Decision.Kind != "question" || cs[0].Decision.Message != "Pick one" {
		t.Fatalf("a reminder of another kind: %+v", cs)
	}
	e.ApplyHook(at(8000), hook(combine.Working, "", ""))
	if cs := e.ApplyHook(at(9000), reminder); len(cs) != 1 || cs[0].Decision.Message != "Claude needs your permission" {
		t.Fatalf("a reminder with no prompt standing: %+v", cs)
	}
}

// The rows of the signal table in docs/detection.md, one test each.

// OSC 7501 is a level the program keeps current; a hook is an edge and is
// weaker: a newer hook never overrules it, except a prompt it has not
// caught up with yet.
func TestSignalTableOSCOutranksHooks(t *testing.T) {
	e, _ := newToy(t)
	e.Feed(at(0), []byte("\x1b]7501;state=working\a"))
	// Codex's notify for its hidden title thread: done while working.
	if cs := e.ApplyHook(at(200), hook(combine.Done, "", "")); len(cs) != 0 {
		t.Fatalf("a hook overruled the program's own report: %s", states(cs))
	}
	// Claude Code's PermissionRequest comes before its OSC 7501 blocked.
	cs := e.ApplyHook(at(300), hook(combine.Blocked, "permission", "approve Bash: ls"))
	if states(cs) != "blocked@300ms" || cs[0].Decision.Source != combine.SourceHook {
		t.Fatalf("newer hook prompt: %+v", cs)
	}
	// The report catches up without words: the hook's words stay.
	e.Feed(at(320), []byte("\x1b]7501;state=blocked:kind=permission\a"))
	if d, _ := e.Decision(); d.Source != combine.SourceOSC7501 || d.Message != "approve Bash: ls" {
		t.Fatalf("report without words: %+v", d)
	}
	// Answered: the program says working; the stale hook prompt is older.
	if got := states(e.Feed(at(400), []byte("\x1b]7501;state=working\a"))); got != "working@400ms" {
		t.Fatalf("answered: %s", got)
	}
	// A turn that failed (StopFailure) is news the record may not carry.
	if got := states(e.ApplyHook(at(500), hook(combine.Error, "", "rate_limit"))); got != "error@500ms" {
		t.Fatalf("hook failure: %s", got)
	}
	if got := states(e.Feed(at(600), []byte("\x1b]7501;state=idle\a"))); got != "idle@600ms" {
		t.Fatalf("report after failure: %s", got)
	}
}

// A seen done stays seen: only a new turn's end raises done again.
func TestSignalTableSeenDoneStaysSeen(t *testing.T) {
	for _, tt := range []struct {
		name      string
		turn      func(e *Engine, ms int) // a whole turn ending at ms
		renew     func(e *Engine, ms int) // the same done, said again
		wantStart string
	}{
		{"osc7501",
			func(e *Engine, ms int) {
				e.Feed(at(ms-500), []byte("\x1b]7501;state=working\a"))
				e.Feed(at(ms), []byte("\x1b]7501;state=done\a"))
			},
			func(e *Engine, ms int) { e.Feed(at(ms), []byte("\x1b]7501;state=done\a")) }, ""},
		{"hook",
			func(e *Engine, ms int) {
				e.ApplyHook(at(ms-500), hook(combine.Working, "", ""))
				e.ApplyHook(at(ms), hook(combine.Done, "", ""))
			},
			nil, ""},
		{"screen",
			func(e *Engine, ms int) {
				e.Feed(at(ms-1000), []byte("\r\x1b[K⠋ esc to interrupt"))
				tickUntil(e, at(ms-900))
				e.Feed(at(ms), []byte("\r\x1b[K? for shortcuts"))
				tickUntil(e, at(ms+400))
			},
			nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set, _ := rules.Loader{Embedded: fstest.MapFS{"toy.toml": {Data: []byte(toyManifest)}}}.Load(nil)
			e := New(Config{Cols: 40, Rows: 6, Rules: set, Agent: "toy", MarkDone: true})
			defer e.Close()
			tt.turn(e, 1000)
			if d, _ := e.Decision(); d.State != combine.Done {
				t.Fatalf("turn end: %s", d.State)
			}
			if got := states(e.MarkSeen(at(2000))); got != "idle@2s" {
				t.Fatalf("seen: %q", got)
			}
			// Redraws, timers and the standing report raise nothing.
			e.Feed(at(2100), []byte("\r\x1b[K? for shortcuts"))
			var cs []Change
			cs = append(cs, tickUntil(e, at(3000))...)
			cs = append(cs, e.Classify(at(3100))...)
			if tt.renew != nil {
				tt.renew(e, 3200)
				cs = append(cs, tickUntil(e, at(3500))...)
			}
			if len(cs) != 0 {
				t.Fatalf("a seen done came back: %s", states(cs))
			}
			// The next turn's end raises done again.
			tt.turn(e, 5000)
			if d, _ := e.Decision(); d.State != combine.Done {
				t.Fatalf("next turn end: %s", d.State)
			}
		})
	}
}

// A hook's report that nothing renews gives way to what the screen shows.
func TestSignalTableHooksAreEdges(t *testing.T) {
	e, _ := newToy(t)
	e.ApplyHook(at(0), hook(combine.Working, "", ""))
	e.Feed(at(100), []byte("\r\x1b[K⠋ esc to interrupt"))
	tickUntil(e, at(10000))
	// Esc mid-turn: no Stop hook; the screen shows the input box.
	e.Feed(at(10000), []byte("\r\x1b[K? for shortcuts"))
	cs := tickUntil(e, at(11000))
	if states(cs) != "idle@10.32s" || cs[0].Decision.Source != combine.SourceScreen {
		t.Fatalf("working outlived an interrupt: %+v", cs)
	}
	// A done nothing follows up (Codex notify has no "working"): the
	// next turn on screen ends it after the grace.
	e.ApplyHook(at(12000), hook(combine.Done, "", ""))
	e.Feed(at(12100), []byte("\r\x1b[K⠋ esc to interrupt"))
	if cs := tickUntil(e, at(12500)); len(cs) != 0 {
		t.Fatalf("hook overruled within its grace: %s", states(cs))
	}
	e.Feed(at(13100), []byte("\r\x1b[K⠙ esc to interrupt"))
	if got := states(tickUntil(e, at(13200))); got != "working@13.12s" {
		t.Fatalf("stuck hook done: %s", got)
	}
	// An unknown screen leaves a hook's word standing.
	e.ApplyHook(at(14000), hook(combine.Working, "", ""))
	e.Feed(at(14100), []byte("\r\x1b[Ksomething else"))
	if cs := tickUntil(e, at(20000)); len(cs) != 0 {
		t.Fatalf("hook dropped on an unknown screen: %s", states(cs))
	}
	// The agent exited back to its shell: its hook's word ends with it.
	if got := states(e.SetProcess(at(21000), combine.Process{AgentExited: true})); got != "idle@21s" {
		t.Fatalf("hook outlived its agent: %s", got)
	}
}

// Only the pane's own conversation counts.
func TestSignalTableOneConversation(t *testing.T) {
	e, _ := newToy(t)
	mine := Hook{State: combine.Working, Session: "mine"}
	e.ApplyHook(at(0), mine)
	// A nested agent in the pane inherits its environment.
	if cs := e.ApplyHook(at(100), Hook{State: combine.Done, Session: "nested"}); len(cs) != 0 {
		t.Fatalf("another conversation decided: %s", states(cs))
	}
	if c := e.Counters(); c.HooksOtherConversation != 1 {
		t.Fatalf("counted %d", c.HooksOtherConversation)
	}
	// A new session (/clear) becomes the pane's.
	e.ApplyHook(at(200), Hook{State: combine.Idle, Session: "fresh", NewSession: true})
	if got := states(e.ApplyHook(at(300), Hook{State: combine.Working, Session: "fresh"})); got != "working@300ms" {
		t.Fatalf("new session: %s", got)
	}
}

// A blocked pane always says what it asks.
func TestSignalTableBlockedSaysWhat(t *testing.T) {
	e, _ := newToy(t)
	// The report comes first with no text; the screen has no prompt yet,
	// and its question line is older than the prompt.
	e.Feed(at(0), []byte("Did the tests pass?\r\n\x1b]7501;state=blocked:kind=permission\a"))
	if d, _ := e.Decision(); d.State != combine.Blocked || d.Message != "a permission prompt is open" {
		t.Fatalf("report without text: %+v", d)
	}
	// The prompt rule matches: its words replace the made-up ones.
	e.Feed(at(100), []byte("Allow make test?"))
	cs := tickUntil(e, at(200))
	if len(cs) != 1 || cs[0].Decision.Message != "Allow make test?" {
		t.Fatalf("screen's words: %+v", cs)
	}
	// And stay while the prompt does.
	e.Feed(at(300), []byte("\x1b]7501;state=blocked:kind=permission\a"))
	tickUntil(e, at(400))
	if d, _ := e.Decision(); d.Message != "Allow make test?" {
		t.Fatalf("words lost: %+v", d)
	}
	// Nothing to read at all: a plain phrase, never an empty message.
	e2, _ := newToy(t)
	e2.Feed(at(0), []byte("\x1b]7501;state=blocked:kind=question\a"))
	if d, _ := e2.Decision(); d.Message != "a question is open" {
		t.Fatalf("no words: %+v", d)
	}
}

// A screen rule that names no words: the question line near the bottom.
func TestPromptLineFromTheScreen(t *testing.T) {
	lines := []string{"Did it work?", "", "╭──────────╮", "│ ❯ Delete build/ and retry? │", "│ 1. Yes  2. No │", "╰──────────╯"}
	if got := promptLine(lines, "question", true); got != "Delete build/ and retry?" {
		t.Fatalf("on screen: %q", got)
	}
	if got := promptLine(lines, "question", false); got != "a question is open" {
		t.Fatalf("not on screen: %q", got)
	}
	if got := promptLine([]string{"nothing asks"}, "login", true); got != "a login is waiting" {
		t.Fatalf("no question: %q", got)
	}
}

// PromptShown is when the screen rules first saw the prompt now on screen.
func TestPromptShown(t *testing.T) {
	e, _ := newToy(t)
	e.ApplyHook(at(0), hook(combine.Blocked, "permission", "approve Bash: ls"))
	if !e.PromptShown().IsZero() {
		t.Fatal("a hook's prompt counted as shown")
	}
	e.Feed(at(300), []byte("Allow ls?"))
	tickUntil(e, at(400))
	e.Feed(at(500), []byte(" "))
	tickUntil(e, at(600))
	if got := e.PromptShown(); !got.Equal(at(320)) {
		t.Fatalf("shown at %v", got.Sub(t0))
	}
	e.Feed(at(700), []byte("\r\x1b[K⠋ esc to interrupt"))
	tickUntil(e, at(800))
	if !e.PromptShown().IsZero() {
		t.Fatal("still shown after it was erased")
	}
}
