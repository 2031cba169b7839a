package autoapprove

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/proctest"
	"github.com/corral-dev/corral/internal/status"
)

const testPolicy = `
[[rule]]
tool = "Bash"
input = "^ls -la /tmp$"
decision = "allow"

[[rule]]
tool = "Bash"
input = "rm -rf"
decision = "deny"
`

// fakePane is a pane as the approver sees it. Every call checks that the
// approver's lock is free: it is never held while calling the pane.
type fakePane struct {
	t *testing.T
	a *Approver

	mu        sync.Mutex
	info      pane.Info
	region    string // the prompt region of a blocked prompt ("": none)
	held      *pane.HeldPrompt
	hooks     bool
	answerErr error
	answers   []string // choices typed, by AnswerHeld or AnswerPrompt
	answerAt  time.Time
	decided   []string // NoteDecided's texts
	undecided int
}

func (f *fakePane) lockFree() {
	if !f.a.mu.TryLock() {
		f.t.Error("the approver's lock is held while it calls its pane")
		return
	}
	f.a.mu.Unlock()
}

func (f *fakePane) Info() pane.Info {
	f.lockFree()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.info
}

func (f *fakePane) PromptRegion() (string, bool) {
	f.lockFree()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.region, f.region != ""
}

func (f *fakePane) HeldPrompt() (pane.HeldPrompt, bool) {
	f.lockFree()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held == nil {
		return pane.HeldPrompt{}, false
	}
	return *f.held, true
}

func (f *fakePane) answer(choice string) (string, error) {
	f.lockFree()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.answerErr != nil {
		return "", f.answerErr
	}
	f.answers = append(f.answers, choice)
	f.answerAt = time.Now()
	f.held = nil
	return choice, nil
}

func (f *fakePane) AnswerHeld(choice, text string) (string, error) { return f.answer(choice) }
func (f *fakePane) AnswerPrompt(choice string) (string, error)     { return f.answer(choice) }

func (f *fakePane) NoteDecided(text string) {
	f.lockFree()
	f.mu.Lock()
	f.decided = append(f.decided, text)
	f.mu.Unlock()
}

func (f *fakePane) NoteUndecided() {
	f.lockFree()
	f.mu.Lock()
	f.undecided++
	f.mu.Unlock()
}

func (f *fakePane) Name() string { return "w1" }

func (f *fakePane) HooksDecide(agent string) bool {
	f.lockFree()
	return f.hooks
}

func (f *fakePane) typed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.answers...)
}

func (f *fakePane) undecidedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.undecided
}

// fakeEvents keeps what the approver logged and notified.
type fakeEvents struct {
	mu       sync.Mutex
	logged   []eventlog.Event
	notified []eventlog.Event
}

func (e *fakeEvents) Log(ev eventlog.Event) {
	e.mu.Lock()
	e.logged = append(e.logged, ev)
	e.mu.Unlock()
}

func (e *fakeEvents) Notify(ev eventlog.Event) {
	e.mu.Lock()
	e.notified = append(e.notified, ev)
	e.mu.Unlock()
}

func (e *fakeEvents) counts() (logged, notified int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.logged), len(e.notified)
}

func newTest(t *testing.T) (*Approver, *fakePane, *fakeEvents) {
	t.Helper()
	evs := &fakeEvents{}
	a, err := Parse("p.toml", []byte(testPolicy), evs)
	if err != nil {
		t.Fatal(err)
	}
	a.drawWait = 200 * time.Millisecond
	blocked := combine.Decision{State: combine.Blocked, Kind: "permission", Source: combine.SourceScreen, Rule: "permission"}
	f := &fakePane{t: t, a: a, info: pane.Info{ID: "p1", Agent: "codex", Decision: blocked}}
	return a, f, evs
}

// report makes the pane's agent report a permission request (OSC 7501).
func (f *fakePane) report(msg string) {
	f.info.Records = []status.Record{{Report: status.Report{State: "blocked", Kind: "permission", Msg: msg}}}
}

func TestDecideHook(t *testing.T) {
	for _, c := range []struct {
		name, input string
		behavior    string // "" leaves it to the person
		rule        int
	}{
		{"allow rule", "ls -la /tmp", "allow", 1},
		{"deny rule", "rm -rf /w", "deny", 2},
		{"no rule", "curl x", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, f, evs := newTest(t)
			got := a.DecideHook(f, agents.Permission{Tool: "Bash", Input: c.input, Whole: true})
			last := a.Latest()
			if last == nil || last.Input != c.input || last.Rule != c.rule || last.Time == "" {
				t.Fatalf("Latest = %+v", last)
			}
			logged, _ := evs.counts()
			if c.behavior == "" {
				if got != nil || last.Decision != "person" || f.undecided != 1 || len(f.decided) != 0 || logged != 0 {
					t.Fatalf("left to the person: got %+v, last %+v, undecided %d, decided %q, %d events", got, last, f.undecided, f.decided, logged)
				}
				return
			}
			if got == nil || got.Behavior != c.behavior || last.Decision != c.behavior {
				t.Fatalf("got %+v, last %+v; want %s", got, last, c.behavior)
			}
			if c.behavior == "deny" && got.Message != "denied by corral policy p.toml rule 2" {
				t.Fatalf("deny message %q", got.Message)
			}
			if len(f.decided) != 1 || f.decided[0] != last.Text || f.undecided != 0 {
				t.Fatalf("pane told decided %q, undecided %d; want %q", f.decided, f.undecided, last.Text)
			}
			ev := evs.logged[0]
			if logged != 1 || ev.Source != SourcePolicy || ev.Rule != fmt.Sprintf("p.toml rule %d", c.rule) ||
				ev.Pane != "p1" || ev.Name != "w1" || ev.Message != last.Text || ev.State != string(combine.Blocked) {
				t.Fatalf("%d events, first %+v", logged, ev)
			}
		})
	}
}

// A permission block the agent reports whole is answered by the rule
// that decides it, once the prompt on screen shows it whole; anything
// else is notified (Takes false), at once or when it is left after all.
func TestTakesReportedRequests(t *testing.T) {
	for _, c := range []struct {
		name      string
		state     combine.State
		hooks     bool
		msg       string // the agent's report ("": none)
		region    string
		answerErr error
		takes     bool
		typed     string // the answer typed ("": none)
		notified  bool   // left to the person after Takes said true
		why       string // in the last decision's text
	}{
		{name: "not a block", state: combine.Working, msg: "approve Bash: ls -la /tmp", region: "ls -la /tmp"},
		{name: "hooks decide", hooks: true, msg: "approve Bash: ls -la /tmp", region: "ls -la /tmp"},
		{name: "screen only", region: "ls -la /tmp"},
		{name: "cut report", msg: "approve Bash: find / -name x…", region: "find / -name x", why: "not read whole"},
		{name: "no rule", msg: "approve Bash: curl x", region: "curl x", why: "no rule matches"},
		{name: "allowed", msg: "approve Bash: ls -la /tmp", region: "Run this?\n│ ls -la /tmp │\n1. Yes", takes: true, typed: "yes", why: "allowed by rule 1"},
		{name: "denied", msg: "approve Bash: rm -rf /w", region: "rm -rf /w", takes: true, typed: "no", why: "denied by rule 2"},
		{name: "prompt shows another command", msg: "approve Bash: ls -la /tmp", region: "$ ls -la /tmp\nrm -rf /w",
			takes: true, notified: true, why: "does not show ls -la /tmp whole"},
		{name: "answer fails", msg: "approve Bash: ls -la /tmp", region: "ls -la /tmp", answerErr: errors.New("pane busy"),
			takes: true, notified: true, why: "could not answer (pane busy)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, f, evs := newTest(t)
			if c.state != "" {
				f.info.Decision.State = c.state
			}
			f.hooks, f.region, f.answerErr = c.hooks, c.region, c.answerErr
			f.info.PromptShown = time.Now()
			if c.msg != "" {
				f.report(c.msg)
			}
			ev := eventlog.Event{Time: time.Now(), Pane: "p1", Agent: "codex", State: string(f.info.Decision.State), Kind: "permission", Message: c.msg}
			if got := a.Takes(f, ev); got != c.takes {
				t.Fatalf("Takes = %v, want %v", got, c.takes)
			}
			switch {
			case c.typed != "":
				if !proctest.WaitFor(2*time.Second, func() bool { return len(f.typed()) > 0 }) {
					t.Fatal("no answer typed")
				}
				if got := f.typed(); len(got) != 1 || got[0] != c.typed {
					t.Fatalf("typed %q, want %q", got, c.typed)
				}
				if !proctest.WaitFor(2*time.Second, func() bool { n, _ := evs.counts(); return n == 1 }) {
					t.Fatal("the decision was not logged")
				}
			case c.notified:
				if !proctest.WaitFor(2*time.Second, func() bool { _, n := evs.counts(); return n == 1 }) {
					t.Fatal("a request left to the person after all was not notified")
				}
				if got := f.typed(); len(got) != 0 {
					t.Fatalf("typed %q into a prompt left to the person", got)
				}
			}
			last := a.Latest()
			if c.why == "" {
				if last != nil {
					t.Fatalf("Latest = %+v, want none", last)
				}
				return
			}
			if last == nil || !strings.Contains(last.Text, c.why) {
				t.Fatalf("Latest = %+v, want a text with %q", last, c.why)
			}
			if n, _ := evs.counts(); c.typed == "" && n != 0 {
				t.Fatalf("%d decision events for a request left to the person", n)
			}
		})
	}
}

// The agent's own "blocked" just after a hook's request was decided is
// not notified; the same block once the quiet is over is.
func TestTakesQuietAfterHookDecision(t *testing.T) {
	a, f, _ := newTest(t)
	if a.DecideHook(f, agents.Permission{Tool: "Bash", Input: "ls -la /tmp", Whole: true}) == nil {
		t.Fatal("the allow rule did not decide")
	}
	decided := time.Now()
	for _, c := range []struct {
		name  string
		at    time.Time
		msg   string
		takes bool
	}{
		{"the same request at once", decided.Add(time.Second), "Bash: ls -la /tmp", true},
		{"a block naming nothing", decided.Add(time.Second), "", true},
		{"another request", decided.Add(time.Second), "Bash: curl x", false},
		{"after the quiet", decided.Add(decidedQuiet + time.Second), "Bash: ls -la /tmp", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := eventlog.Event{Time: c.at, State: string(combine.Blocked), Kind: "permission", Message: c.msg}
			if got := a.Takes(f, ev); got != c.takes {
				t.Fatalf("Takes = %v, want %v", got, c.takes)
			}
		})
	}
	if got := f.typed(); len(got) != 0 {
		t.Fatalf("typed %q: a hook's request is answered by the hook", got)
	}
}

// A held request left to the person is notified at once when the pane
// then reads blocked on it, even if the agent's report has moved on to
// one a rule would allow.
func TestTakesLeftToPersonAtOnce(t *testing.T) {
	a, f, _ := newTest(t)
	f.report("approve Bash: curl x")
	a.Held(f, time.Now())
	if f.undecidedCount() != 1 {
		t.Fatal("a request no rule decides was not released to the person")
	}
	f.report("approve Bash: ls -la /tmp")
	f.region, f.info.PromptShown = "ls -la /tmp", time.Now()
	ev := eventlog.Event{Time: time.Now(), State: string(combine.Blocked), Kind: "permission", Message: "approve Bash: curl x"}
	if a.Takes(f, ev) {
		t.Fatal("Takes took a block already left to the person")
	}
}

// A prompt held back for the policy (the decision window) is answered
// while held when a rule decides the agent's report and the screen shows
// it whole; otherwise it is released to the person.
func TestHeld(t *testing.T) {
	for _, c := range []struct {
		name      string
		hooks     bool
		msg       string
		region    string
		settle    time.Duration
		answerErr error
		typed     string
		released  bool
		why       string
	}{
		{name: "hooks decide", hooks: true, msg: "approve Bash: ls -la /tmp", region: "ls -la /tmp"},
		{name: "screen only", region: "ls -la /tmp", released: true},
		{name: "no rule", msg: "approve Bash: curl x", region: "curl x", released: true, why: "no rule matches"},
		{name: "allowed", msg: "approve Bash: ls -la /tmp", region: "ls -la /tmp", typed: "yes", why: "allowed by rule 1"},
		{name: "allowed after the settle", msg: "approve Bash: ls -la /tmp", region: "ls -la /tmp", settle: 150 * time.Millisecond,
			typed: "yes", why: "allowed by rule 1"},
		{name: "denied", msg: "approve Bash: rm -rf /w", region: "rm -rf /w", typed: "no", why: "denied by rule 2"},
		{name: "prompt shows another command", msg: "approve Bash: ls -la /tmp", region: "ls -la /tmp; rm -rf /w",
			released: true, why: "does not show ls -la /tmp whole"},
		{name: "answer fails", msg: "approve Bash: ls -la /tmp", region: "ls -la /tmp", answerErr: errors.New("no prompt waits"),
			released: true, why: "could not answer (no prompt waits)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, f, evs := newTest(t)
			f.info.Decision.State = combine.Working // held: it does not read blocked
			shown := time.Now()
			f.held = &pane.HeldPrompt{Region: c.region, Shown: shown, Settle: c.settle}
			f.hooks, f.answerErr = c.hooks, c.answerErr
			if c.msg != "" {
				f.report(c.msg)
			}
			a.Held(f, shown)
			switch {
			case c.typed != "":
				if !proctest.WaitFor(2*time.Second, func() bool { return len(f.typed()) > 0 }) {
					t.Fatal("no answer typed")
				}
				f.mu.Lock()
				got, at := f.answers, f.answerAt
				f.mu.Unlock()
				if len(got) != 1 || got[0] != c.typed {
					t.Fatalf("typed %q, want %q", got, c.typed)
				}
				if at.Before(shown.Add(c.settle)) {
					t.Fatalf("answered %v after the prompt was shown, before its settle %v", at.Sub(shown), c.settle)
				}
				if !proctest.WaitFor(2*time.Second, func() bool { n, _ := evs.counts(); return n == 1 }) {
					t.Fatal("the decision was not logged")
				}
			case c.released:
				if !proctest.WaitFor(2*time.Second, func() bool { return f.undecidedCount() == 1 }) {
					t.Fatal("the held prompt was not released to the person")
				}
				if got := f.typed(); len(got) != 0 {
					t.Fatalf("typed %q into a prompt left to the person", got)
				}
			default:
				if f.undecidedCount() != 0 || len(f.typed()) != 0 {
					t.Fatal("the policy acted on a request the agent's hooks decide")
				}
			}
			last := a.Latest()
			if c.why == "" {
				if last != nil {
					t.Fatalf("Latest = %+v, want none", last)
				}
				return
			}
			if last == nil || !strings.Contains(last.Text, c.why) {
				t.Fatalf("Latest = %+v, want a text with %q", last, c.why)
			}
		})
	}
}
