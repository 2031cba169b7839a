package verify

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rulesdata "github.com/corral-dev/corral/agents"
	"github.com/corral-dev/corral/internal/agentdef"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/replay"
	"github.com/corral-dev/corral/internal/rules"
)

func ruleSet(t testing.TB) *rules.Set {
	t.Helper()
	set, errs := rules.Loader{Embedded: rulesdata.Rules}.Load(nil)
	if len(errs) > 0 {
		t.Fatalf("embedded rules: %v", errs)
	}
	return set
}

func TestJudgeStep(t *testing.T) {
	blocked := Want{combine.Blocked, "permission"}
	pt := func(at float64, s combine.State, kind string) Point {
		return Point{At: dur(at), State: s, Kind: kind, Source: "screen"}
	}
	for _, c := range []struct {
		name      string
		tl        []Point
		step      StepRun
		right     bool
		delay     float64
		wantState combine.State
	}{
		{"nothing said: idle by default", nil, StepRun{Want: Want{State: combine.Idle}, Start: 0, Truth: 0.5, End: 2}, true, -0.5, combine.Idle},
		{"reached after the truth", []Point{pt(1, combine.Working, ""), pt(2.25, combine.Blocked, "permission")},
			StepRun{Want: blocked, Start: 1, Truth: 2, End: 3}, true, 0.25, combine.Blocked},
		{"wrong kind", []Point{pt(2, combine.Blocked, "question")}, StepRun{Want: blocked, Start: 1, Truth: 2, End: 3}, false, 0, combine.Blocked},
		{"left the state before the end", []Point{pt(2, combine.Blocked, "permission"), pt(2.5, combine.Idle, "")},
			StepRun{Want: blocked, Start: 1, Truth: 2, End: 3}, false, 0.5, combine.Idle},
		{"changes after the end do not count", []Point{pt(2, combine.Blocked, "permission"), pt(3.5, combine.Idle, "")},
			StepRun{Want: blocked, Start: 1, Truth: 2, End: 3}, true, 0, combine.Blocked},
		{"a same-state point keeps the first entry", []Point{pt(2, combine.Blocked, "permission"), pt(2.5, combine.Blocked, "permission")},
			StepRun{Want: blocked, Start: 1, Truth: 2, End: 3}, true, 0, combine.Blocked},
		{"before the agent's own report", []Point{pt(1.8, combine.Done, "")}, StepRun{Want: Want{State: combine.Done}, Start: 1, Truth: 2, End: 3}, true, -0.2, combine.Done},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := judgeStep(c.tl, c.step)
			if v.Right != c.right || v.State != c.wantState || (v.Delay-c.delay) > 1e-9 || (c.delay-v.Delay) > 1e-9 {
				t.Fatalf("got %+v, want right=%v state=%s delay=%.2f", v, c.right, c.wantState, c.delay)
			}
		})
	}
}

// A step the agent cannot take is left out with the answer that follows it.
func TestSteps(t *testing.T) {
	p, err := ProfileFor("", []string{"corral", "fake-agent", "--osc7501"})
	if err != nil || p.Name != "fake-agent" {
		t.Fatalf("profile %v %v", p, err)
	}
	run, skipped := Steps(p, Scenario)
	var names []string
	for _, s := range run {
		names = append(names, s.Name)
	}
	if got, want := strings.Join(names, " "), "startup shell shell-yes edit edit-yes deny deny-no prose slow slow-done"; got != want {
		t.Fatalf("steps %q, want %q", got, want)
	}
	if got, want := strings.Join(skipped, " "), "question question-answer interrupt interrupt-esc early early-esc"; got != want {
		t.Fatalf("skipped %q, want %q", got, want)
	}
	claude, _ := ProfileFor("claude-code", nil)
	if run, _ := Steps(claude, Scenario); len(run) != len(Scenario) {
		t.Fatalf("claude-code runs %d of %d steps", len(run), len(Scenario))
	}
	if s, ok := claude.turnText(Scenario[3], "/w"); !ok || s != "corral:edit /w/notes.txt" {
		t.Fatalf("edit turn %q", s)
	}
}

func TestProfileFor(t *testing.T) {
	for _, c := range []struct {
		name    string
		command []string
		want    string
	}{
		{"claude", nil, "claude-code"},
		{"gemini", nil, "gemini"},
		{"", []string{"/opt/bin/claude", "--x"}, "claude-code"},
		{"", []string{"/usr/local/bin/corral", "fake-agent"}, "fake-agent"},
		{"", []string{"vim"}, ""},
		{"nope", nil, ""},
	} {
		p, err := ProfileFor(c.name, c.command)
		if c.want == "" {
			if err == nil {
				t.Errorf("%q %q: want an error, got %s", c.name, c.command, p.Name)
			}
			continue
		}
		if err != nil || p.Name != c.want {
			t.Errorf("%q %q: %v %v, want %s", c.name, c.command, p, err, c.want)
		}
	}
}

// fakeScreen draws a minimal Claude Code screen: idle input box, or a
// permission dialog, with an optional OSC 7501 report.
func fakeScreen(dialog bool, report string) string {
	var b strings.Builder
	b.WriteString("\x1b[H\x1b[2J")
	if report != "" {
		b.WriteString("\x1b]7501;" + report + "\x1b\\")
	}
	rule := strings.Repeat("─", 80)
	if dialog {
		b.WriteString(rule + "\r\n Bash command\r\n   ls -la /tmp\r\n Do you want to proceed?\r\n ❯ 1. Yes\r\n   2. No\r\n Esc to cancel · Tab to amend\r\n")
	} else {
		b.WriteString(rule + "\r\n❯ \r\n" + rule + "\r\n  ? for shortcuts\r\n")
	}
	return b.String()
}

// Replays limited to one signal see only that signal: the screen's
// dialog, the hook's PermissionRequest, the program's report; hooks are
// applied at their own times.
func TestReplaySignals(t *testing.T) {
	set := ruleSet(t)
	perm, _ := json.Marshal(map[string]any{"hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": map[string]string{"command": "ls -la /tmp"}})
	stop, _ := json.Marshal(map[string]any{"hook_event_name": "Stop"})
	msg := base64.StdEncoding.EncodeToString([]byte("approve Bash: ls -la /tmp"))
	rec := &Recording{Rules: "claude-code", Cols: 100, Rows: 20,
		Cast: &replay.Recording{Cols: 100, Rows: 20, Events: []replay.Event{
			{At: 0, Code: "o", Data: fakeScreen(false, "state=idle")},
			{At: 2 * time.Second, Code: "o", Data: fakeScreen(true, "state=blocked:kind=permission:msg="+msg)},
			{At: 4 * time.Second, Code: "o", Data: fakeScreen(false, "state=done")},
		}},
		Hooks: []Hook{{At: 1.5, Agent: "claude-code", Payload: perm}, {At: 3.9, Agent: "claude-code", Payload: stop}},
		Steps: []StepRun{
			{Name: "startup", Want: Want{State: combine.Idle}, End: 1},
			{Name: "shell", Want: Want{combine.Blocked, "permission"}, Start: 1, Truth: 2, End: 3},
			{Name: "shell-yes", Want: Want{State: combine.Done}, Start: 3, Truth: 4, End: 5},
		}}
	res := Judge(rec, set)
	for _, c := range []struct {
		scorer string
		step   int
		state  combine.State
		source string
		delay  float64
	}{
		{"screen", 1, combine.Blocked, "screen", 0},
		{"hooks", 1, combine.Blocked, "hook", -0.5},
		{"osc7501", 1, combine.Blocked, "osc7501", 0},
		{"hooks", 2, combine.Done, "hook", -0.1},
		{"osc7501", 2, combine.Done, "osc7501", 0},
		// blocked → idle with no work seen between: the screen cannot
		// tell a finished turn from a refused prompt.
		{"screen", 2, combine.Idle, "screen", 0},
	} {
		v := res.Steps[c.step].Verdicts[c.scorer]
		if v.State != c.state || v.Source != c.source || (c.source != "screen" && (v.Delay-c.delay > 0.01 || c.delay-v.Delay > 0.01)) {
			t.Errorf("%s at %s: %+v, want %s from %s, delay %.2f", c.scorer, rec.Steps[c.step].Name, v, c.state, c.source, c.delay)
		}
	}
	// The screen alone sees the prompt go only once idle is confirmed.
	if v := res.Steps[2].Verdicts["screen"]; v.Delay <= 0 || v.Delay > 1 {
		t.Errorf("screen delay at the turn's end %.2fs", v.Delay)
	}
	if res.Scores["replay"] != 3 {
		t.Errorf("all signals: %d of 3 right", res.Scores["replay"])
	}
}

// A recording survives Save and Load, and judges the same.
func TestRecordingRoundTrip(t *testing.T) {
	set := ruleSet(t)
	perm, _ := json.Marshal(map[string]any{"hook_event_name": "PermissionRequest", "tool_name": "Bash"})
	rec := &Recording{Agent: "fake-agent", Rules: "claude-code", Cols: 100, Rows: 20,
		Cast: &replay.Recording{Cols: 100, Rows: 20, Events: []replay.Event{
			{At: 0, Code: "o", Data: fakeScreen(false, "")},
			{At: time.Second, Code: "i", Data: "ask"},
			{At: 2 * time.Second, Code: "m", Data: "state=blocked:kind=permission"},
			{At: 2 * time.Second, Code: "o", Data: fakeScreen(true, "")},
		}},
		Hooks: []Hook{{At: 2.1, Agent: "claude-code", Payload: perm}},
		Live:  []LivePoint{{At: 2.01, State: "blocked", Kind: "permission", Source: "screen", Rule: "permission"}},
		Steps: []StepRun{{Name: "shell", Want: Want{combine.Blocked, "permission"}, Start: 1, Truth: 2, End: 3, TruthSource: "phase", Right: true}}}
	dir := t.TempDir()
	if err := rec.Save(dir); err != nil {
		t.Fatal(err)
	}
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, b := Judge(rec, set), Judge(back, set)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("judged differently after a round trip:\n%s\n%s", ja, jb)
	}
	if len(back.Cast.Markers()) != 1 || len(back.Hooks) != 1 || a.Scores["live"] != 1 || a.Scores["screen"] != 1 {
		t.Fatalf("round trip lost something: %+v %+v", back, a.Scores)
	}
}

// liveDir holds recordings of real agent CLIs taken with
// corral verify --record; each must replay to the state corral had live.
const liveDir = "../../testdata/live/verify"

// Every recorded step corral got right live is still right when the
// recording (output bytes and hook timeline) is replayed through today's
// engine and rules; a step it got wrong is reported, and must not become
// a different wrong.
func TestLiveRecordings(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(liveDir, "*", "run.json"))
	if len(dirs) == 0 {
		t.Fatal("no recordings under testdata/live/verify")
	}
	set := ruleSet(t)
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			rec, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			res := Judge(rec, set)
			for _, s := range res.Steps {
				v := s.Verdicts["replay"]
				switch {
				case s.Right && !v.Right:
					t.Errorf("%s: want %s, replay says %s (source %s, rule %q); live was right", s.Name, s.Want, stateOf(v), v.Source, v.Rule)
				case !s.Right && v.Right:
					t.Logf("%s: now right (%s); it was wrong live: record the agent again", s.Name, s.Want)
				case !s.Right:
					t.Logf("%s: known wrong: want %s, got %s (source %s)", s.Name, s.Want, stateOf(v), v.Source)
				}
			}
			var line []string
			for _, sc := range Scorers {
				line = append(line, fmt.Sprintf("%s %d/%d", sc.Name, res.Scores[sc.Name], len(res.Steps)))
			}
			t.Logf("%s %s: %s", rec.Agent, rec.Version, strings.Join(line, ", "))
		})
	}
}

var update = flag.Bool("update", false, "rewrite the versions and the matrix in docs/agents.md from the registry and testdata/live/verify")

// TestAgentsMatrix renders the matrix of docs/agents.md from the
// recordings; with -update it rewrites the part between the markers.
func TestAgentsMatrix(t *testing.T) {
	set := ruleSet(t)
	var results []*Result
	for _, p := range Profiles() {
		rec, err := Load(filepath.Join(liveDir, p.Name))
		if err != nil {
			continue
		}
		results = append(results, Judge(rec, set))
	}
	var b strings.Builder
	Matrix(&b, results)
	if !strings.Contains(b.String(), "| claude-code |") {
		t.Fatalf("matrix without Claude Code:\n%s", b.String())
	}
	var v strings.Builder
	Versions(&v, agentdef.BuiltIn())
	const doc = "../../docs/agents.md"
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	for _, part := range []struct{ name, text, why string }{
		{"versions", v.String(), "the registry (agents/*/agent.toml) says"},
		{"matrix", b.String(), "the recordings give today"},
	} {
		begin, end := "<!-- "+part.name+" begin -->\n", "<!-- "+part.name+" end -->"
		i, j := strings.Index(page, begin), strings.Index(page, end)
		if i < 0 || j < i {
			t.Fatalf("%s has no %s markers", doc, part.name)
		}
		if !*update {
			// The page says what the runs say, through today's engine and rules.
			if got := page[i+len(begin) : j]; got != part.text {
				t.Errorf("docs/agents.md's %s is not what %s: run go test ./internal/verify -run TestAgentsMatrix -update", part.name, part.why)
			}
			continue
		}
		page = page[:i+len(begin)] + part.text + page[j:]
	}
	if !*update {
		return
	}
	if err := os.WriteFile(doc, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every profile that talks to a model gets a scripted server that answers
// on its URL.
func TestStartModel(t *testing.T) {
	for _, p := range Profiles() {
		m, err := startModel(p.API)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if p.API == APINone {
			if m != nil {
				t.Errorf("%s: a model server for no API", p.Name)
			}
			continue
		}
		if m == nil || !strings.HasPrefix(m.URL, "http://127.0.0.1:") {
			t.Fatalf("%s: no server URL", p.Name)
		}
		m.Close()
	}
}

// A step's fault makes it wrong live, whatever corral's state; the
// replays judge the state alone.
func TestJudgeFault(t *testing.T) {
	rec := &Recording{Agent: "fake-agent", Rules: "claude-code", Cols: 80, Rows: 24, Cast: &replay.Recording{Cols: 80, Rows: 24},
		Steps: []StepRun{{Name: "startup", Want: Want{State: combine.Idle}, End: 1, Fault: "corral read idle at 0.10s, before the agent's ready screen"}},
		Live:  []LivePoint{{At: 0.1, State: "idle", Source: "screen"}}}
	res := Judge(rec, ruleSet(t))
	if res.Steps[0].Verdicts["live"].Right || !res.Steps[0].Verdicts["screen"].Right || res.OK() {
		t.Fatalf("verdicts %+v", res.Steps[0].Verdicts)
	}
}

// An interrupt must end working within the step's Within, counted from
// the moment its keys were typed.
func TestLate(t *testing.T) {
	s := Step{Name: "early-esc", Key: KeyInterrupt, Want: Want{State: combine.Idle}, Within: time.Second}
	for _, c := range []struct {
		name  string
		live  []Point
		fault bool
	}{
		{"in time", []Point{{At: dur(10.5), State: combine.Idle}}, false},
		{"late", []Point{{At: dur(10.2), State: combine.Working}, {At: dur(11.5), State: combine.Idle}}, true},
		{"never", []Point{{At: dur(10.2), State: combine.Working}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dr := &driver{cap: newCapture(80, 24)}
			defer dr.cap.close()
			dr.cap.live = c.live
			if got := dr.late(s, dur(10)); (got != "") != c.fault {
				t.Fatalf("late = %q, want fault %v", got, c.fault)
			}
		})
	}
}

// In every scenario each step's state differs from the one the step
// before leaves (a stale state is never scored right), and in the auto
// scenario every prompt is answered through corral (corral answer), so
// that the answer keys of the rule that reads it are what is typed.
func TestScenarios(t *testing.T) {
	all := map[string][]Step{"default": Scenario}
	for name, s := range scenarios {
		all[name] = s
	}
	for name, steps := range all {
		if steps[0].Name != "startup" {
			t.Errorf("%s: starts with %s, not startup", name, steps[0].Name)
		}
		seen := map[string]bool{}
		for i, s := range steps {
			if seen[s.Name] {
				t.Errorf("%s: step %s twice", name, s.Name)
			}
			seen[s.Name] = true
			if i > 0 && s.Want == steps[i-1].Want {
				t.Errorf("%s: %s wants %s, as %s before it", name, s.Name, s.Want, steps[i-1].Name)
			}
			if s.Turn != "" && (s.Answer != "" || s.Key != KeyNone) {
				t.Errorf("%s: %s both types a turn and answers", name, s.Name)
			}
		}
	}
	for i, s := range AutoScenario[1:] {
		if AutoScenario[i].Want.State == combine.Blocked && s.Answer == "" {
			t.Errorf("auto: %s answers %s's prompt without corral answer", s.Name, AutoScenario[i].Name)
		}
	}
}
