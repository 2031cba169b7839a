package jobs

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/procs"
)

func TestMain(m *testing.M) {
	// This binary is the jobs' holder and guard (Options.HolderExe), as
	// the corral binary is the daemon's.
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "jobhold":
			os.Exit(headless.HoldMain(os.Args[2:], os.Stdout, os.Stderr))
		case "guard":
			os.Exit(procs.GuardMain(os.Args[2:], os.Stderr))
		}
	}
	os.Exit(m.Run())
}

// changes collects a job's changes of state.
type changes struct {
	mu  sync.Mutex
	got []detect.Change
}

func (c *changes) add(ch detect.Change) {
	c.mu.Lock()
	c.got = append(c.got, ch)
	c.mu.Unlock()
}

func (c *changes) record(_, _, _ string, ch detect.Change) { c.add(ch) }

// states is the changes as state/kind, in order.
func (c *changes) states() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, ch := range c.got {
		out = append(out, string(ch.Decision.State)+"/"+ch.Decision.Kind)
	}
	return strings.Join(out, " ")
}

// idleJob is a job whose run never starts: its events are fed by the
// test through the options it was given.
func idleJob(t *testing.T, onChange func(detect.Change)) (*Job, headless.Options) {
	t.Helper()
	j, _, o := newJob("jt", "test", headless.Options{Agent: "gemini"}, onChange, nil)
	t.Cleanup(j.cancel)
	return j, o
}

// A job's state comes from its stream: a retry of the model API says so
// until the model answers (an init or a warning is no answer), a stall
// until output comes again, and a decision on a permission request puts
// it back to work. Each change is told once.
func TestJobStateFromItsStream(t *testing.T) {
	retry := headless.Event{Type: headless.EventRetry, Text: "Attempt 1 failed"}
	stall := headless.Event{Type: headless.EventStall, Text: "1s"}
	type step struct {
		ev    headless.Event
		stall bool // then OnStall, as the run calls it after the stall event
		kind  string
	}
	for _, tc := range []struct {
		name    string
		steps   []step
		changes string
	}{
		{"a retry lasts until the model answers", []step{
			{ev: headless.Event{Type: headless.EventInit, SessionID: "s"}, kind: ""},
			{ev: retry, kind: KindRetrying},
			{ev: headless.Event{Type: headless.EventWarning, Text: "slow"}, kind: KindRetrying},
			{ev: headless.Event{Type: headless.EventInit, SessionID: "s"}, kind: KindRetrying},
			{ev: headless.Event{Type: headless.EventText, Text: "hi"}, kind: ""},
		}, "working/retrying working/"},
		{"a stall lasts until output comes", []step{
			{ev: stall, stall: true, kind: KindStalled},
			{ev: stall, stall: true, kind: KindStalled},
			{ev: headless.Event{Type: headless.EventToolUse, Tool: "Bash"}, kind: ""},
		}, "working/stalled working/"},
		{"a decision puts it back to work", []step{
			{ev: retry, kind: KindRetrying},
			{ev: headless.Event{Type: headless.EventDecision, Allow: true, By: "policy"}, kind: ""},
		}, "working/retrying working/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ch changes
			j, o := idleJob(t, ch.add)
			for i, st := range tc.steps {
				o.OnEvent(st.ev)
				if st.stall {
					o.OnStall(time.Second)
				}
				if d := j.Decision(); d.State != combine.Working || d.Kind != st.kind {
					t.Fatalf("step %d (%s): %s/%s, want working/%s", i, st.ev.Type, d.State, d.Kind, st.kind)
				}
			}
			if got := ch.states(); got != tc.changes {
				t.Errorf("changes: %q, want %q", got, tc.changes)
			}
			if j.Session() != "s" && tc.steps[0].ev.Type == headless.EventInit {
				t.Errorf("session: %q", j.Session())
			}
		})
	}
}

// A job's screen is its readable events, a line each, a streamed text
// on one line; a line is cut at a character's start, and only the
// newest lines are kept.
func TestJobScreen(t *testing.T) {
	text := func(s string, delta bool) headless.Event {
		return headless.Event{Type: headless.EventText, Text: s, Delta: delta}
	}
	long := strings.Repeat("a", jobLineMax-len(text("", false).Summary())-1) + "é and more"
	many := make([]headless.Event, jobLines+5)
	for i := range many {
		many[i] = text(fmt.Sprint("line ", i), false)
	}
	for _, tc := range []struct {
		name string
		evs  []headless.Event
		want []string // the kept lines' last ones
		kept int
	}{
		{"a streamed text is one line", []headless.Event{text("Hel", true), text("", true), text("lo", true), text("Bye", false)},
			[]string{text("Hel", true).Summary() + "lo", text("Bye", false).Summary()}, 2},
		{"what is not readable is not shown", []headless.Event{{Type: headless.EventOther, Line: "{}"}, text("x", false)},
			[]string{text("x", false).Summary()}, 1},
		{"lines of a text are lines", []headless.Event{text("one\ntwo", false)},
			strings.Split(text("one\ntwo", false).Summary(), "\n"), 2},
		{"a long line is cut where a character starts", []headless.Event{text(long, false)},
			[]string{text(long, false).Summary()[:jobLineMax-1] + "…"}, 1},
		{"the newest lines are kept", many, []string{many[len(many)-1].Summary()}, jobLines},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, o := idleJob(t, nil)
			for _, ev := range tc.evs {
				o.OnEvent(ev)
			}
			j.mu.Lock()
			lines := append([]string(nil), j.lines...)
			j.mu.Unlock()
			if len(lines) != tc.kept {
				t.Fatalf("%d lines kept, want %d: %q", len(lines), tc.kept, lines)
			}
			if got := lines[len(lines)-len(tc.want):]; fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.want) {
				t.Errorf("lines %q, want %q", got, tc.want)
			}
			snap := j.Snapshot()
			if len(snap.Lines) != min(len(lines), 40) || snap.Lines[len(snap.Lines)-1] != lines[len(lines)-1] || snap.Title != "test" {
				t.Errorf("snapshot: %d lines, title %q", len(snap.Lines), snap.Title)
			}
			if j.ANSI() != strings.Join(snap.Lines, "\r\n") {
				t.Errorf("ansi: %q", j.ANSI())
			}
		})
	}
}

// A job keeps its newest events for its stream: a stream that starts
// late or falls behind learns how many it missed (a line first, on its
// feed), one from the future starts at the end, and a finished job lets
// its events go.
func TestJobEventsKept(t *testing.T) {
	j, o := idleJob(t, nil)
	total := 2*jobEvents + 1
	for i := range total {
		o.OnEvent(headless.Event{Type: headless.EventOther, Line: fmt.Sprint(i)})
	}
	evs, after, missed, more, ended := j.Since(0)
	if len(evs) != jobEvents || after != total || missed != jobEvents+1 || ended || evs[0].Line != fmt.Sprint(jobEvents+1) {
		t.Fatalf("Since(0): %d events from %q, after %d, missed %d, ended %v", len(evs), evs[0].Line, after, missed, ended)
	}
	lines, _, _, _ := j.Feed().Since(0)
	if d, ok := lines[0].(headless.Event); !ok || d.Type != headless.EventDiagnostic || !strings.HasPrefix(d.Line, api.FellBehind) ||
		!strings.Contains(d.Line, fmt.Sprint(jobEvents+1)) || len(lines) != jobEvents+1 {
		t.Fatalf("the feed's first line: %+v (%d lines)", lines[0], len(lines))
	}
	if evs, after2, missed, _, _ := j.Since(total + 5); len(evs) != 0 || after2 != total || missed != 0 {
		t.Fatalf("Since(future): %d events, after %d, missed %d", len(evs), after2, missed)
	}
	select {
	case <-more:
		t.Fatal("more is closed before another event")
	default:
	}
	o.OnEvent(headless.Event{Type: headless.EventOther})
	select {
	case <-more:
	default:
		t.Fatal("more is not closed by a new event")
	}

	j.finishAt(headless.Outcome{State: "done"}, time.Now())
	j.releaseEvents()
	evs, after, missed, _, ended = j.Since(0)
	if len(evs) != 0 || after != total+1 || missed != total+1 || !ended {
		t.Fatalf("after the release: %d events, after %d, missed %d, ended %v", len(evs), after, missed, ended)
	}
	if out := j.Feed().Outcome(); out.(*headless.Outcome).State != "done" {
		t.Fatalf("the feed's outcome: %+v", out)
	}
}

// A permission request blocks the job until answered: yes and always
// allow, no and cancel deny, anything else is refused and the request
// stays; a job that asks nothing says it is not blocked.
func TestJobAnswer(t *testing.T) {
	for _, tc := range []struct {
		choice string
		allow  bool
		err    error
	}{
		{"yes", true, nil}, {"always", true, nil}, {"1", true, nil},
		{"no", false, nil}, {"cancel", false, nil}, {"2", false, nil},
		{"maybe", false, pane.ErrNoAnswer},
	} {
		t.Run(tc.choice, func(t *testing.T) {
			var ch changes
			j, o := idleJob(t, ch.add)
			type answer struct {
				allow bool
				by    string
			}
			answered := make(chan answer, 2)
			o.OnPermission(headless.Event{Type: headless.EventPermission, Tool: "Bash", Input: "ls"}, func(allow bool, by string) {
				answered <- answer{allow, by}
			})
			if d := j.Decision(); d.State != combine.Blocked || d.Kind != "permission" || d.Message != "approve Bash: ls" {
				t.Fatalf("asked: %+v", d)
			}
			if pr := j.JSON().Prompt; pr == nil || strings.Join(pr.Answers, " ") != "yes always no cancel" || len(pr.Choices) != 0 {
				t.Fatalf("the request's prompt: %+v", pr)
			}
			_, err := j.Answer(tc.choice)
			if !errors.Is(err, tc.err) {
				t.Fatalf("Answer(%s): %v, want %v", tc.choice, err, tc.err)
			}
			if tc.err != nil {
				if len(answered) != 0 || j.Decision().State != combine.Blocked {
					t.Fatalf("a refused answer went through: %d answers, %s", len(answered), j.Decision().State)
				}
				tc.choice, tc.allow = "yes", true // the request is still there
				if _, err := j.Answer("yes"); err != nil {
					t.Fatalf("the request is gone after a refused answer: %v", err)
				}
			}
			if a := <-answered; a.allow != tc.allow || a.by != "corral answer "+tc.choice {
				t.Errorf("answered %+v, want allow %v by corral answer %s", a, tc.allow, tc.choice)
			}
			// It stays blocked until its run's decision event comes (see
			// TestJobStateFromItsStream), but nothing is pending.
			if _, err := j.Answer("yes"); !errors.Is(err, pane.ErrNotBlocked) || !strings.Contains(err.Error(), "(it is blocked)") {
				t.Errorf("a second answer: %v", err)
			}
			if pr := j.JSON().Prompt; pr != nil {
				t.Errorf("an answered request's prompt: %+v", pr)
			}
			if got := ch.states(); got != "blocked/permission" {
				t.Errorf("changes: %q", got)
			}
		})
	}
}

// A request to start a job becomes its run's options: the agent and mode
// are checked, a policy is parsed, Claude Code's and Qwen Code's prompts
// go to the permission relay unless the run has no stdin, and the row
// keeps the policy's text and the fleet job.
func TestFromRequest(t *testing.T) {
	policy := "[[rule]]\ntool = \"Read\"\ndecision = \"allow\"\n"
	fleet := &api.FleetJob{ID: "f1", From: "h", Attempt: 2}
	for _, tc := range []struct {
		name   string
		req    api.ExecRequest
		err    string
		agent  string
		argv   string
		prompt string
		policy bool
	}{
		{name: "claude's prompt goes to the relay", req: api.ExecRequest{Agent: "claude", Command: []string{"claude", "-p", "hi"}},
			agent: "claude", argv: "claude -p --input-format stream-json --permission-prompt-tool stdio", prompt: "hi"},
		{name: "no relay", req: api.ExecRequest{Agent: "claude", Command: []string{"claude", "-p", "hi"}, NoRelay: true},
			agent: "claude", argv: "claude -p hi"},
		{name: "pty-lite has no stdin", req: api.ExecRequest{Agent: "claude", Command: []string{"claude", "-p", "hi"}, Mode: "pty-lite"},
			agent: "claude", argv: "claude -p hi"},
		{name: "qwen is found by its command", req: api.ExecRequest{Agent: "claude", Command: []string{"/usr/lib/qwen.js", "-p", "hi"}},
			agent: "qwen", argv: "/usr/lib/qwen.js --input-format stream-json --output-format stream-json --channel SDK", prompt: "hi"},
		{name: "a policy", req: api.ExecRequest{Agent: "gemini", Command: []string{"gemini"}, Policy: policy, PolicySource: "p.toml", Fleet: fleet},
			agent: "gemini", argv: "gemini", policy: true},
		{name: "acp takes --prompt", req: api.ExecRequest{Agent: "acp", Command: []string{"agent"}, Prompt: "go"},
			agent: "acp", argv: "agent", prompt: "go"},
		{name: "acp without a prompt", req: api.ExecRequest{Agent: "acp", Command: []string{"agent"}}, err: "takes its prompt from --prompt"},
		{name: "an unknown agent", req: api.ExecRequest{Agent: "nope", Command: []string{"x"}}, err: `agent "nope": use `},
		{name: "an unknown mode", req: api.ExecRequest{Agent: "gemini", Command: []string{"x"}, Mode: "tty"}, err: `mode "tty": use pipe or pty-lite`},
		{name: "a broken policy", req: api.ExecRequest{Agent: "gemini", Command: []string{"x"}, Policy: "[[", PolicySource: "p.toml"}, err: "p.toml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, keep, err := FromRequest(tc.req, nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Agent != tc.agent || strings.Join(o.Argv, " ") != tc.argv ||
				o.Prompt != tc.prompt || (o.Policy != nil) != tc.policy {
				t.Errorf("options: agent %s, argv %q, prompt %q, policy %v", o.Agent, o.Argv, o.Prompt, o.Policy != nil)
			}
			if keep.Policy != tc.req.Policy || keep.PolicySource != tc.req.PolicySource || keep.Fleet != tc.req.Fleet {
				t.Errorf("keep: %+v", keep)
			}
		})
	}
}
