package replay

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rulesdata "github.com/corral-dev/corral/agents"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/rules"
)

const castDir = "../../testdata/casts"

func ruleSet(t testing.TB) *rules.Set {
	t.Helper()
	set, errs := rules.Loader{Embedded: rulesdata.Rules}.Load(nil)
	if len(errs) > 0 {
		t.Fatalf("embedded rules: %v", errs)
	}
	return set
}

// rawState is one STATE.raw of a single-session recording.
type rawState struct {
	Agent    string // manifest name
	Dir      string
	State    string
	RawBytes int `json:"raw_bytes"`
}

var rawAgents = map[string]string{
	"codex": "codex", "gemini": "gemini", "qwen": "qwen-code", "opencode": "opencode",
	"copilot": "copilot", "claude-code-2.1.197": "claude-code",
}

func rawStates(t testing.TB) []rawState {
	t.Helper()
	var out []rawState
	for dir, agent := range rawAgents {
		data, err := os.ReadFile(filepath.Join(castDir, dir, "states.json"))
		if err != nil {
			t.Fatal(err)
		}
		var states []rawState
		if err := json.Unmarshal(data, &states); err != nil {
			t.Fatalf("%s/states.json: %v", dir, err)
		}
		for _, s := range states {
			s.Agent, s.Dir = agent, dir
			out = append(out, s)
		}
	}
	return out
}

func (s rawState) bytes(t testing.TB) []byte {
	data, err := os.ReadFile(filepath.Join(castDir, s.Dir, "session.raw"))
	if err != nil {
		t.Fatal(err)
	}
	if s.RawBytes > len(data) {
		t.Fatalf("%s/%s: raw_bytes %d beyond session.raw (%d)", s.Dir, s.State, s.RawBytes, len(data))
	}
	return data[:s.RawBytes]
}

// wantState is the state a STATE.raw must end in.
func wantState(state string) (combine.State, string) {
	switch {
	case strings.HasPrefix(state, "approval"), state == "trust_prompt":
		return combine.Blocked, "permission"
	case strings.HasPrefix(state, "working"):
		return combine.Working, ""
	}
	return combine.Idle, ""
}

// Every STATE.raw of the five other agents (and Claude Code 2.1.197) ends
// in its state, judged by the screen rules on the emulated screen.
func TestRawStatesEndInTheirState(t *testing.T) {
	set := ruleSet(t)
	for _, s := range rawStates(t) {
		t.Run(s.Dir+"/"+s.State, func(t *testing.T) {
			rec, err := Parse(s.bytes(t), 120, 32)
			if err != nil {
				t.Fatal(err)
			}
			for _, agent := range []string{s.Agent, ""} {
				// Screen rules are these agents' only signal (Codex also
				// reports; TestRawStatesWithReports covers that).
				res := Run(rec, Options{Rules: set, Agent: agent, ScreenOnly: true})
				d, _ := res.Engine.Decision()
				wantS, wantK := wantState(s.State)
				if d.State != wantS || d.Kind != wantK {
					snap := res.Engine.Terminal().Snapshot()
					t.Errorf("agent %q (using %s): state %s/%s (rule %q), want %s/%s\nscreen:\n%s",
						agent, res.Engine.Manifest().Name, d.State, d.Kind, d.Rule, wantS, wantK, snap.Text())
				}
				if got := res.Engine.Manifest().Name; got != s.Agent {
					t.Errorf("agent %q: recognised as %s, want %s", agent, got, s.Agent)
				}
				res.Close()
			}
		})
	}
}

// The emulated screen matches what tmux rendered for the same bytes.
func TestScreensMatchTmux(t *testing.T) {
	set := ruleSet(t)
	for _, s := range rawStates(t) {
		t.Run(s.Dir+"/"+s.State, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join(castDir, s.Dir, s.State+".screen.txt"))
			if err != nil {
				t.Fatal(err)
			}
			rec, _ := Parse(s.bytes(t), 120, 32)
			res := Run(rec, Options{Rules: set, Agent: s.Agent})
			defer res.Close()
			got := res.Engine.Terminal().Snapshot().Lines
			wantLines := strings.Split(strings.TrimRight(string(want), "\n"), "\n")
			diffs := 0
			for i := range max(len(got), len(wantLines)) {
				var g, w string
				if i < len(got) {
					g = strings.TrimRight(got[i], " ")
				}
				if i < len(wantLines) {
					w = strings.TrimRight(wantLines[i], " ")
				}
				if g != w {
					diffs++
					if diffs <= 3 {
						t.Errorf("row %d:\n got %q\nwant %q", i, g, w)
					}
				}
			}
			if diffs > 0 {
				t.Errorf("%d of %d rows differ from tmux", diffs, len(wantLines))
			}
		})
	}
}

// castTruth replays a Claude Code cast and compares the engine's state with
// each truth marker. A marker holds until the next; the screen follows
// within a frame or two, so the state is read twice in each interval:
// Lag after the marker, and just before the next marker.
const lag = 500 * time.Millisecond

type markerCheck struct {
	at   time.Duration
	want string // marker text
	got  []combine.Decision
}

func castTruth(t *testing.T, file string, screenOnly bool) []markerCheck {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(castDir, "claude-code", file))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Parse(data, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	markers := rec.Markers()
	checks := make([]markerCheck, len(markers))
	var samples []time.Duration
	owner := map[time.Duration]int{}
	for i, m := range markers {
		end := rec.Events[len(rec.Events)-1].At + time.Second
		if i+1 < len(markers) {
			end = markers[i+1].At
		}
		checks[i] = markerCheck{at: m.At, want: m.Data}
		for _, at := range []time.Duration{min(m.At+lag, end-time.Millisecond), end - time.Millisecond} {
			if _, dup := owner[at]; !dup && (len(samples) == 0 || at > samples[len(samples)-1]) {
				samples = append(samples, at)
				owner[at] = i
			}
		}
	}
	res := Run(rec, Options{Rules: ruleSet(t), ScreenOnly: screenOnly, Samples: samples,
		OnSample: func(at time.Duration, e *detect.Engine) {
			d, _ := e.Decision()
			checks[owner[at]].got = append(checks[owner[at]].got, d)
		}})
	res.Close()
	return checks
}

// agrees says whether a decision matches a marker. Screens cannot tell done
// from idle; clear (exit) is not judged here.
func agrees(marker string, d combine.Decision, screenOnly bool) bool {
	r, _, _ := strings.Cut(strings.TrimPrefix(marker, "state="), ":")
	kind := ""
	if _, k, ok := strings.Cut(marker, "kind="); ok {
		kind = k
	}
	switch r {
	case "clear":
		return true
	case "done":
		if screenOnly {
			return d.State == combine.Idle
		}
		return d.State == combine.Done
	}
	return string(d.State) == r && d.Kind == kind
}

func testCasts(t *testing.T, suffix string, screenOnly bool) {
	files, _ := filepath.Glob(filepath.Join(castDir, "claude-code", "*.cast"))
	n := 0
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasSuffix(name, ".screen.cast") != (suffix == ".screen.cast") {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			for _, c := range castTruth(t, name, screenOnly) {
				for i, d := range c.got {
					if !agrees(c.want, d, screenOnly) {
						t.Errorf("marker %.3fs %s: sample %d says %s/%s (source %s, rule %q)", c.at.Seconds(), c.want, i, d.State, d.Kind, d.Source, d.Rule)
					}
				}
			}
		})
	}
	if n == 0 {
		t.Fatal("no recordings found")
	}
}

// On .screen.cast files (reports removed) the screen rules alone must agree
// with every truth marker.
func TestClaudeScreenRulesAgreeWithMarkers(t *testing.T) { testCasts(t, ".screen.cast", true) }

// On full .cast files the program's own OSC 7501 reports must.
func TestClaudeReportsAgreeWithMarkers(t *testing.T) { testCasts(t, ".cast", false) }
