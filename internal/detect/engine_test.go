package detect

import (
	"bytes"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/corral-dev/corral/internal/rules"
	"github.com/corral-dev/corral/internal/signal"
)

const toyManifest = `
name = "toy"
[timing]
idle_confirm = "300ms"
[[rule]]
id = "prompt"
state = "blocked"
kind = "permission"
region = "bottom:3"
pattern = '(?P<msg>Allow [^?]+\?)'
[[rule]]
id = "spinner"
state = "working"
region = "bottom:1"
pattern = 'esc to interrupt'
`

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func newToy(t *testing.T) (*Engine, *bytes.Buffer) {
	t.Helper()
	set, errs := rules.Loader{Embedded: fstest.MapFS{"toy.toml": {Data: []byte(toyManifest)}}}.Load(nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var replies bytes.Buffer
	e := New(Config{Cols: 40, Rows: 6, Rules: set, Agent: "toy", Replies: &replies})
	t.Cleanup(e.Close)
	return e, &replies
}

// tickUntil fires every deadline up to now, like a live timer would.
func tickUntil(e *Engine, now time.Time) []Change {
	var out []Change
	for {
		dl, ok := e.Deadline()
		if !ok || dl.After(now) {
			return out
		}
		out = append(out, e.Tick(dl)...)
	}
}

func states(cs []Change) string {
	var s []string
	for _, c := range cs {
		s = append(s, string(c.Decision.State)+"@"+c.At.Sub(t0).String())
	}
	return strings.Join(s, ",")
}

func TestQuietWindow(t *testing.T) {
	e, _ := newToy(t)
	// Bytes alone change nothing until the quiet window passes.
	if cs := e.Feed(at(0), []byte("\r\x1b[K⠋ esc to interrupt")); len(cs) != 0 {
		t.Fatalf("classified before the quiet window: %s", states(cs))
	}
	dl, ok := e.Deadline()
	if !ok || !dl.Equal(at(0).Add(DefaultQuiet)) {
		t.Fatalf("deadline %v %v", dl, ok)
	}
	if got := states(tickUntil(e, at(100))); got != "working@20ms" {
		t.Fatalf("changes %s", got)
	}
}

// A continuous stream never goes quiet; MaxWait bounds the delay.
func TestMaxWaitUnderContinuousOutput(t *testing.T) {
	e, _ := newToy(t)
	var got []Change
	for ms := 0; ms <= 200; ms += 5 {
		got = append(got, tickUntil(e, at(ms))...)
		e.Feed(at(ms), []byte("\r\x1b[K⠋ esc to interrupt"))
	}
	if len(got) == 0 || got[0].At.After(at(int(DefaultMaxWait/time.Millisecond))) {
		t.Fatalf("first classification %s, want by %v", states(got), DefaultMaxWait)
	}
}

func TestBlockedIsImmediateIdleIsConfirmed(t *testing.T) {
	e, _ := newToy(t)
	e.Feed(at(0), []byte("⠋ esc to interrupt"))
	tickUntil(e, at(50))
	// The spinner line blanks for a moment: no idle yet.
	e.Feed(at(100), []byte("\r\x1b[K"))
	if cs := tickUntil(e, at(150)); len(cs) != 0 {
		t.Fatalf("idle without confirmation: %s", states(cs))
	}
	e.Feed(at(200), []byte("⠙ esc to interrupt"))
	if cs := tickUntil(e, at(700)); len(cs) != 0 {
		t.Fatalf("flicker became a change: %s", states(cs))
	}
	// A prompt: blocked on the first classification after the quiet window.
	e.Feed(at(1000), []byte("\r\x1b[KAllow rm -rf build?"))
	cs := tickUntil(e, at(1100))
	if states(cs) != "blocked@1.02s" || cs[0].Decision.Message != "Allow rm -rf build?" || cs[0].Decision.Rule != "prompt" {
		t.Fatalf("changes %+v", cs)
	}
	// Answered and erased, then the work it allowed is drawn: no idle in
	// between.
	e.Feed(at(2000), []byte("\r\x1b[K"))
	if cs := tickUntil(e, at(2150)); len(cs) != 0 {
		t.Fatalf("idle between an answer and the work it allowed: %s", states(cs))
	}
	e.Feed(at(2200), []byte("⠋ esc to interrupt"))
	if got := states(tickUntil(e, at(2300))); got != "working@2.22s" {
		t.Fatalf("changes %s", got)
	}
	// working → idle is confirmed after IdleConfirm of steady idle.
	e.Feed(at(3000), []byte("⠋ esc to interrupt"))
	tickUntil(e, at(3100))
	e.Feed(at(4000), []byte("\r\x1b[K"))
	if got := states(tickUntil(e, at(5000))); got != "idle@4.32s" {
		t.Fatalf("changes %s", got)
	}
}

func TestReportsApplyAtOnce(t *testing.T) {
	e, _ := newToy(t)
	cs := e.Feed(at(0), []byte("\x1b]7501;state=working:progress=40\x1b\\"))
	if states(cs) != "working@0s" || cs[0].Decision.Source != signal.SourceOSC7501 {
		t.Fatalf("changes %+v", cs)
	}
	// The program says done: no idle confirmation for its own word.
	if got := states(e.Feed(at(500), []byte("\x1b]7501;state=done\a"))); got != "done@500ms" {
		t.Fatalf("changes %s", got)
	}
	// A prompt on screen beats the report.
	e.Feed(at(1000), []byte("\x1b]7501;state=working\a"))
	e.Feed(at(1100), []byte("Allow ls?"))
	cs = tickUntil(e, at(1200))
	if states(cs) != "blocked@1.12s" || cs[0].Decision.Source != signal.SourceScreen {
		t.Fatalf("changes %+v", cs)
	}
	// A shell prompt mark ends working records; done records stay.
	e.Feed(at(2000), []byte("\r\x1b[K\x1b]7501;state=working:id=job\a\x1b]7501;state=done:id=other\a"))
	e.Feed(at(2100), []byte("\x1b]133;A\a"))
	var ids []string
	for _, r := range e.Records() {
		ids = append(ids, r.ID+"="+string(r.State))
	}
	if strings.Join(ids, ",") != "other=done" {
		t.Fatalf("records after OSC 133;A: %v", ids)
	}
	// Malformed reports are counted, never fatal.
	e.Feed(at(3000), []byte("\x1b]7501;state=bogus\a\x1b]7501;state=clear:id=a//b\a"))
	if c := e.Counters(); c.StatusDiscarded != 2 {
		t.Fatalf("discarded %d", c.StatusDiscarded)
	}
}

func TestScreenOnlyIgnoresReports(t *testing.T) {
	set, _ := rules.Loader{Embedded: fstest.MapFS{"toy.toml": {Data: []byte(toyManifest)}}}.Load(nil)
	e := New(Config{Cols: 40, Rows: 6, Rules: set, Agent: "toy", ScreenOnly: true})
	defer e.Close()
	if cs := e.Feed(at(0), []byte("\x1b]7501;state=blocked:kind=question\a")); len(cs) != 0 {
		t.Fatalf("screen-only engine used a report: %s", states(cs))
	}
}

func TestRepliesReachTheProgram(t *testing.T) {
	e, replies := newToy(t)
	e.Feed(at(0), []byte("\x1b]7501;?\x1b\\\x1b[c"))
	if replies.String() != "\x1b]7501;?\x1b\\\x1b[?62;1;6;22c" {
		t.Fatalf("replies %q", replies.String())
	}
}

func TestProgressAndNotifications(t *testing.T) {
	e, _ := newToy(t)
	e.Feed(at(0), []byte("\x1b]9;4;1;42\a\x1b]777;notify;Build;done\a\a"))
	if st, v := e.Progress(); st != 1 || v != 42 {
		t.Fatalf("progress %d %d", st, v)
	}
	c := e.Counters()
	if c.Notifications != 1 || c.LastNotification != "done" || c.Bells != 1 {
		t.Fatalf("counters %+v", c)
	}
	e.Feed(at(10), []byte("\x1b]9;4;0\a"))
	if _, v := e.Progress(); v != -1 {
		t.Fatalf("progress after remove %d", v)
	}
}

func TestDoneUntilSeen(t *testing.T) {
	set, _ := rules.Loader{Embedded: fstest.MapFS{"toy.toml": {Data: []byte(toyManifest)}}}.Load(nil)
	e := New(Config{Cols: 40, Rows: 6, Rules: set, Agent: "toy", MarkDone: true})
	defer e.Close()
	e.Feed(at(0), []byte("⠋ esc to interrupt"))
	tickUntil(e, at(100))
	e.Feed(at(1000), []byte("\r\x1b[K"))
	if got := states(tickUntil(e, at(2000))); got != "done@1.32s" {
		t.Fatalf("turn end: %s", got)
	}
	// Output that is not a new turn keeps it done; looking makes it idle.
	e.Feed(at(2100), []byte("x"))
	tickUntil(e, at(2200))
	if d, _ := e.Decision(); d.State != signal.Done {
		t.Fatalf("state %s", d.State)
	}
	if got := states(e.MarkSeen(at(3000))); got != "idle@3s" {
		t.Fatalf("seen: %s", got)
	}
	// The program's own done works the same way.
	e.Feed(at(4000), []byte("\x1b]7501;state=working\a"))
	if got := states(e.Feed(at(5000), []byte("\x1b]7501;state=done\a"))); got != "done@5s" {
		t.Fatalf("reported done: %s", got)
	}
	if got := states(e.MarkSeen(at(6000))); got != "idle@6s" {
		t.Fatalf("reported done, seen: %s", got)
	}
	// A process exit beats all.
	if cs := e.SetProcess(at(7000), signal.Process{PaneExited: true, ExitCode: 2}); states(cs) != "exited@7s" || cs[0].Decision.ExitCode != 2 {
		t.Fatalf("exit: %+v", cs)
	}
}

func TestHookReports(t *testing.T) {
	e, _ := newToy(t)
	cs := e.ApplyHook(at(0), signal.Blocked, "permission", "approve Bash: ls")
	if states(cs) != "blocked@0s" || cs[0].Decision.Source != signal.SourceHook || cs[0].Decision.Message != "approve Bash: ls" {
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
	// The newest of a hook and an OSC 7501 report speaks.
	e.Feed(at(7000), []byte("\x1b]7501;state=working\a"))
	if got := states(e.ApplyHook(at(7100), signal.Done, "", "")); got != "done@7.1s" {
		t.Fatalf("hook after report: %s", got)
	}
	if got := states(e.Feed(at(7200), []byte("\x1b]7501;state=working\a"))); got != "working@7.2s" {
		t.Fatalf("report after hook: %s", got)
	}
}
