package detect

import (
	"bytes"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/rules"
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
[[rule]]
id = "input"
state = "idle"
region = "bottom:1"
pattern = '\? for shortcuts'
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
	if states(cs) != "working@0s" || cs[0].Decision.Source != combine.SourceOSC7501 {
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
	if states(cs) != "blocked@1.12s" || cs[0].Decision.Source != combine.SourceScreen {
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

// Reclassifying an unchanged screen (the sweep, a deadline) reuses its
// last reading; output, a resize or another manifest reads it again, and
// the decision is the one a fresh reading gives.
func TestUnchangedScreenIsReadOnce(t *testing.T) {
	e, _ := newToy(t)
	reads := func() int { return e.Counters().ScreenReads }
	e.Feed(at(0), []byte("Allow Bash: ls?\r\n\r\n? for shortcuts"))
	e.Classify(at(10))
	base := reads()
	for i := range 5 {
		e.Classify(at(20 + i))
	}
	if got := reads(); got != base {
		t.Errorf("five reclassifications of an unchanged screen read it %d times", got-base)
	}
	if d, _ := e.Decision(); d.State != combine.Blocked || d.Message != "Allow Bash: ls?" {
		t.Errorf("decision %+v", d)
	}
	e.Feed(at(100), []byte("\x1b[2J\x1b[Hesc to interrupt"))
	e.Classify(at(110))
	if got := reads(); got != base+1 {
		t.Errorf("output then a classification: %d screen reads, want 1", got-base)
	}
	if d, _ := e.Decision(); d.State != combine.Working {
		t.Errorf("after new output: %+v", d)
	}
	e.Resize(at(200), 30, 6)
	e.Classify(at(210))
	e.Classify(at(220))
	if got := reads(); got != base+2 {
		t.Errorf("a resize then two classifications: %d screen reads in all, want 2", got-base)
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
	if d, _ := e.Decision(); d.State != combine.Done {
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
	if cs := e.SetProcess(at(7000), combine.Process{PaneExited: true, ExitCode: 2}); states(cs) != "exited@7s" || cs[0].Decision.ExitCode != 2 {
		t.Fatalf("exit: %+v", cs)
	}
}

// A turn a person interrupted (Esc, Ctrl-C, a refused prompt) ends idle:
// they saw it end. A turn that ends on its own later is done again.
func TestInterruptedTurnEndsIdle(t *testing.T) {
	set, _ := rules.Loader{Embedded: fstest.MapFS{"toy.toml": {Data: []byte(toyManifest)}}}.Load(nil)
	e := New(Config{Cols: 40, Rows: 6, Rules: set, Agent: "toy", MarkDone: true})
	defer e.Close()
	e.Feed(at(0), []byte("\r\x1b[K⠋ esc to interrupt"))
	tickUntil(e, at(100))
	e.NoteInterrupt(at(1000))
	e.Feed(at(1100), []byte("\r\x1b[K? for shortcuts"))
	// The idle rule's match after the person's Esc needs no confirmation.
	if got := states(tickUntil(e, at(2000))); got != "idle@1.12s" {
		t.Fatalf("interrupted turn: %s", got)
	}
	// A blank screen after an interrupt matches no idle rule: it still
	// waits the confirmation (a spinner can blank for a frame).
	e.Feed(at(5000), []byte("\r\x1b[K⠋ esc to interrupt"))
	tickUntil(e, at(5100))
	e.NoteInterrupt(at(6000))
	e.Feed(at(6100), []byte("\r\x1b[K"))
	if got := states(tickUntil(e, at(7000))); got != "idle@6.42s" {
		t.Fatalf("blank after an interrupt: %s", got)
	}
	// The next turn ends on its own, long after: done.
	e.Feed(at(10000), []byte("\r\x1b[K⠋ esc to interrupt"))
	tickUntil(e, at(10100))
	e.Feed(at(11000), []byte("\r\x1b[K? for shortcuts"))
	if got := states(tickUntil(e, at(12000))); got != "done@11.32s" {
		t.Fatalf("a turn that ended on its own: %s", got)
	}
	// The program's own done right after an interrupt is the same.
	e.Feed(at(13000), []byte("\x1b]7501;state=working\a"))
	e.NoteInterrupt(at(13500))
	if got := states(e.Feed(at(13600), []byte("\x1b]7501;state=done\a"))); got != "idle@13.6s" {
		t.Fatalf("reported done after an interrupt: %s", got)
	}
	// The interrupted turn ends idle by the program's word; the next turn,
	// though it ends within the window, is done.
	e.Feed(at(14000), []byte("\x1b]7501;state=working\a"))
	e.NoteInterrupt(at(14100))
	e.Feed(at(14200), []byte("\x1b]7501;state=idle\a"))
	e.Feed(at(14500), []byte("\x1b]7501;state=working\a"))
	if got := states(e.Feed(at(15000), []byte("\x1b]7501;state=done\a"))); got != "done@15s" {
		t.Fatalf("the turn after an interrupted one: %s", got)
	}
	if !IsInterrupt([]byte("\x1b")) || !IsInterrupt([]byte("\x03")) || IsInterrupt([]byte("\x1b[A")) || IsInterrupt([]byte("x")) {
		t.Fatal("IsInterrupt")
	}
}

// The decision window: a permission prompt waits for a policy's decision
// before the pane reads blocked; a decided one reads working (approved)
// and never blocked; an undecided one is blocked when released or when the
// window ends; without a window nothing waits.
func TestDecisionWindow(t *testing.T) {
	e, _ := newToy(t)
	e.SetDecisionWindow(time.Second)
	e.Feed(at(0), []byte("⠋ esc to interrupt"))
	tickUntil(e, at(100))
	// Drawn, then decided within the window: never blocked.
	cs := append(e.Feed(at(200), []byte("\r\x1b[KAllow ls -la?")), tickUntil(e, at(600))...)
	if len(cs) != 1 || !cs[0].Held || cs[0].Decision.State != combine.Blocked || cs[0].Previous.State != combine.Working {
		t.Fatalf("changes while a policy may decide: %+v", cs)
	}
	if d, ok := e.Held(); !ok || d.Kind != "permission" {
		t.Fatalf("the prompt held: %+v %v", d, ok)
	}
	if d, _ := e.Decision(); d.State != combine.Working {
		t.Fatalf("a held prompt's pane reads %s", d.State)
	}
	cs = e.NoteDecided(at(700), "allowed by rule 1: ls -la")
	if len(cs) != 1 || cs[0].Decision.State != combine.Working || cs[0].Decision.Kind != "approved" || cs[0].Decision.Source != SourcePolicy {
		t.Fatalf("decided: %+v", cs)
	}
	e.Feed(at(900), []byte("\r\x1b[K⠋ esc to interrupt"))
	if got := states(tickUntil(e, at(3500))); got != "working@920ms" { // approved → plain working
		t.Fatalf("after the decision: %s", got)
	}
	// Left to the person: blocked at once when released.
	if cs := append(e.Feed(at(4000), []byte("\r\x1b[KAllow rm -rf build?")), tickUntil(e, at(4200))...); len(cs) != 1 || !cs[0].Held {
		t.Fatalf("held prompt changed: %+v", cs)
	}
	if cs := e.NoteUndecided(at(4300)); len(cs) != 1 || cs[0].Decision.State != combine.Blocked {
		t.Fatalf("released: %+v", cs)
	}
	// Nobody decides: blocked when the window ends.
	e.Feed(at(5000), []byte("\r\x1b[K⠋ esc to interrupt"))
	tickUntil(e, at(5400))
	if cs := append(e.Feed(at(6000), []byte("\r\x1b[KAllow curl x?")), tickUntil(e, at(6500))...); len(cs) != 1 || !cs[0].Held {
		t.Fatalf("a new prompt is not held: %+v", cs)
	}
	if got := states(tickUntil(e, at(8000))); got != "blocked@7.02s" {
		t.Fatalf("undecided: %s", got)
	}
	// A decided prompt still on screen after its time is blocked.
	e2, _ := newToy(t)
	e2.SetDecisionWindow(time.Second)
	e2.Feed(at(0), []byte("Allow ls?"))
	got := e2.NoteDecided(at(10), "allowed")
	if got := states(append(got, tickUntil(e2, at(5000))...)); got != "working@10ms,blocked@2.01s" {
		t.Fatalf("decided but still asking: %s", got)
	}
}

func newStartingToy(t *testing.T, timing string) *Engine {
	t.Helper()
	m := strings.Replace(toyManifest, "[timing]\n", "[timing]\n"+timing, 1)
	set, errs := rules.Loader{Embedded: fstest.MapFS{"toy.toml": {Data: []byte(m)}}}.Load(nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	e := New(Config{Cols: 40, Rows: 6, Rules: set, Agent: "toy", MarkDone: true, Started: at(0)})
	t.Cleanup(e.Close)
	return e
}

// A freshly started agent reads working, kind starting, until its ready
// screen has stayed for ready_settle: never idle before it takes input,
// and never done (starting is not a turn). A prompt ends starting at once;
// an agent that never draws its ready screen is in error after
// start_timeout, or idle if its own report said so.
func TestStartingPhase(t *testing.T) {
	e := newStartingToy(t, "ready_settle = \"500ms\"\n")
	if d, _ := e.Decision(); d.State != combine.Working || d.Kind != KindStarting {
		t.Fatalf("a fresh pane reads %+v", d)
	}
	// A blank screen, then a spinner while it initialises: still starting.
	cs := append(e.Feed(at(100), []byte("loading")), tickUntil(e, at(400))...)
	cs = append(cs, e.Feed(at(500), []byte("\r\x1b[K⠋ esc to interrupt"))...)
	cs = append(cs, tickUntil(e, at(900))...)
	if len(cs) != 0 {
		t.Fatalf("changes while starting: %+v", cs)
	}
	// The ready screen: idle only once it has stayed for ready_settle.
	e.Feed(at(1000), []byte("\r\x1b[K? for shortcuts"))
	if got := states(tickUntil(e, at(1400))); got != "" {
		t.Fatalf("idle before ready_settle: %s", got)
	}
	cs = tickUntil(e, at(3000))
	if got := states(cs); got != "idle@1.52s" {
		t.Fatalf("the ready screen: %s", got)
	}
	if cs[0].Previous.Kind != KindStarting || cs[0].Decision.Kind != "" {
		t.Fatalf("starting → idle: %+v", cs[0])
	}
	// A real turn after it ends in done as usual.
	e.Feed(at(4000), []byte("\r\x1b[K⠋ esc to interrupt"))
	tickUntil(e, at(4500))
	e.Feed(at(5000), []byte("\r\x1b[K? for shortcuts"))
	if got := states(tickUntil(e, at(6000))); got != "working@4.02s,done@5.32s" && got != "done@5.32s" {
		t.Fatalf("the first turn: %s", got)
	}

	// A trust prompt while starting is blocked at once; answered, the
	// agent is starting again until its ready screen has stayed.
	e = newStartingToy(t, "ready_settle = \"500ms\"\n")
	e.Feed(at(100), []byte("Allow this folder?"))
	if got := states(tickUntil(e, at(300))); got != "blocked@120ms" {
		t.Fatalf("a prompt while starting: %s", got)
	}
	e.Feed(at(1000), []byte("\r\x1b[K? for shortcuts"))
	cs = tickUntil(e, at(3000))
	if got := states(cs); got != "working@1.02s,idle@1.52s" || cs[0].Decision.Kind != KindStarting {
		t.Fatalf("after the startup prompt: %+v", cs)
	}

	// Never ready: an error after start_timeout; idle if it said so.
	e = newStartingToy(t, "start_timeout = \"2s\"\n")
	e.Feed(at(100), []byte("something else"))
	cs = tickUntil(e, at(5000))
	if got := states(cs); got != "error@2s" || !strings.Contains(cs[0].Decision.Message, "did not start") {
		t.Fatalf("never ready: %+v", cs)
	}
	e = newStartingToy(t, "start_timeout = \"2s\"\n")
	e.Feed(at(100), []byte("\x1b]7501;state=idle\a"))
	if got := states(tickUntil(e, at(5000))); got != "idle@2s" {
		t.Fatalf("never ready but reported idle: %s", got)
	}

	// An agent not known (the generic manifest) has no starting phase.
	set, _ := rules.Loader{Embedded: fstest.MapFS{"generic.toml": {Data: []byte("name = \"generic\"\n")}}}.Load(nil)
	g := New(Config{Cols: 40, Rows: 6, Rules: set, Started: at(0)})
	defer g.Close()
	if d, _ := g.Decision(); d.State != combine.Idle {
		t.Fatalf("an unknown program reads %+v", d)
	}
}

// An interrupt typed while a hook says working, and a screen that then
// shows neither work nor a prompt (an input box no rule knows), ends the
// turn within idle_confirm: the hook's working gives way. Without the
// interrupt it stands; with the spinner still drawn it stands too.
func TestInterruptEndsAHookTurn(t *testing.T) {
	for _, c := range []struct {
		name      string
		interrupt bool
		screen    string
		want      string
	}{
		{"interrupted", true, "\r\x1b[K> fix the bug", "idle@1.6s"}, // re-check at idle_confirm, then confirmed
		{"not interrupted", false, "\r\x1b[K> fix the bug", ""},
		{"still spinning", true, "\r\x1b[K⠋ esc to interrupt", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, _ := newToy(t)
			e.ApplyHook(at(0), hook(combine.Working, "", ""))
			e.Feed(at(100), []byte("\r\x1b[K⠋ esc to interrupt"))
			tickUntil(e, at(900))
			if d, _ := e.Decision(); d.State != combine.Working {
				t.Fatalf("before the interrupt: %+v", d)
			}
			if c.interrupt {
				e.NoteInterrupt(at(1000))
			}
			e.Feed(at(1050), []byte(c.screen))
			if got := states(tickUntil(e, at(4000))); got != c.want {
				t.Fatalf("after: %q, want %q", got, c.want)
			}
		})
	}
}

// A turn that ends with a background task still running (an OSC 7501
// child record at work) is done, and says so.
func TestDoneWithBackgroundWork(t *testing.T) {
	e, _ := newToy(t)
	e.Feed(at(0), []byte("\x1b]7501;state=working\a"))
	tickUntil(e, at(500))
	cs := append(e.Feed(at(1000), []byte("\x1b]7501;state=working:id=bg1\a\x1b]7501;state=done\a")), tickUntil(e, at(2000))...)
	if len(cs) != 1 || cs[0].Decision.State != combine.Done || cs[0].Decision.Message != "done; 1 background task still running" {
		t.Fatalf("a turn ended with a background task: %+v", cs)
	}
}

// An Esc typed just before the hook's working (the agent reported a submit
// the Esc had already stopped) ends that turn too; one typed long before
// does not.
func TestInterruptJustBeforeTheHook(t *testing.T) {
	for _, c := range []struct {
		esc  int
		want string
	}{
		{700, "idle@1.6s"},
		{-2000, ""},
	} {
		e, _ := newToy(t)
		e.NoteInterrupt(at(c.esc))
		e.ApplyHook(at(1000), hook(combine.Working, "", ""))
		e.Feed(at(1050), []byte("\r\x1b[K> fix the bug"))
		tickUntil(e, at(1200))
		if got := states(tickUntil(e, at(4000))); got != c.want {
			t.Errorf("Esc at %d ms, hook at 1 s: %q, want %q", c.esc, got, c.want)
		}
	}
}
