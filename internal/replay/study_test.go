package replay

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/rules"
	"github.com/corral-dev/corral/internal/term"
)

func TestStripEscapes(t *testing.T) {
	tests := map[string]string{
		"a\x1b[1;31mb\x1b[0mc":             "abc",
		"x\x1b]0;title\ay\x1b]8;;u\x1b\\z": "xyz",
		"\x1b(Bq\x1b=r":                    "qr",
		"keep\r\nlines\ttabs\x07":          "keep\r\nlines\ttabs",
		"cut\x1b[":                         "cut",
	}
	for in, want := range tests {
		if got := term.StripEscapes([]byte(in)); got != want {
			t.Errorf("StripEscapes(%q) = %q, want %q", in, got, want)
		}
	}
	if got := TailLines([]byte("old\r\nspin 1\rspin 2\r\n"), 1000); strings.Join(got, "|") != "old|spin 2|" {
		t.Errorf("TailLines = %q", got)
	}
}

// studyCase is one screen with a known state.
type studyCase struct {
	name   string
	agent  string
	rows   int
	output []byte        // all output bytes up to the moment
	want   combine.State // the truth
	kind   string
	rec    *Recording    // for casts: replayed to the moment
	at     time.Duration // for casts
}

// TestStudy reproduces the study corral's design grew from: the same
// recordings judged by the same rules, once on "strip escapes from the
// last 8 KB of bytes, keep what follows the last CR per line" and once on
// the emulated screen. The emulated screen must be right on every one; the
// table shows how the byte tail fares. Run with -v to see it.
func TestStudy(t *testing.T) {
	set := ruleSet(t)
	var cases []studyCase
	for _, s := range rawStates(t) {
		want, kind := wantState(s.State)
		cases = append(cases, studyCase{name: s.Dir + "/" + s.State, agent: s.Agent, rows: 32, output: s.bytes(t), want: want, kind: kind})
	}
	cases = append(cases, claudeMarkerCases(t)...)
	sort.Slice(cases, func(i, j int) bool { return cases[i].name < cases[j].name })

	var table strings.Builder
	fmt.Fprintf(&table, "%-44s %-20s %-20s %-20s\n", "recording", "truth", "emulated screen", "tail 8 KB")
	screenRight, tailRight := 0, 0
	for _, c := range cases {
		m, _ := set.ByName(c.agent)
		truth := label(string(c.want), c.kind)

		var screen rules.Verdict
		if c.rec != nil {
			res := Run(c.rec, Options{Rules: set, Agent: c.agent, Until: c.at})
			snap := res.Engine.Terminal().Snapshot()
			screen = m.Classify(rules.Screen{Lines: snap.Lines, Title: snap.Title})
			res.Close()
		} else {
			rec, _ := Parse(c.output, 120, c.rows)
			e := detect.New(detect.Config{Cols: rec.Cols, Rows: rec.Rows, Rules: set, Agent: c.agent})
			e.Feed(Epoch, []byte(rec.Events[0].Data))
			snap := e.Terminal().Snapshot()
			screen = m.Classify(rules.Screen{Lines: snap.Lines, Title: snap.Title})
			e.Close()
		}
		lines := TailLines(c.output, 8192)
		if len(lines) > c.rows {
			lines = lines[len(lines)-c.rows:]
		}
		tail := m.Classify(rules.Screen{Lines: lines, Title: lastTitle(c.output)})

		sOK := verdictAgrees(screen, c.want, c.kind)
		tOK := verdictAgrees(tail, c.want, c.kind)
		if sOK {
			screenRight++
		} else {
			t.Errorf("%s: emulated screen says %s (rule %q), truth %s", c.name, label(string(screen.State), screen.Kind), screen.Rule, truth)
		}
		if tOK {
			tailRight++
		}
		fmt.Fprintf(&table, "%-44s %-20s %-20s %-20s\n", c.name, truth, mark(screen, sOK), mark(tail, tOK))
	}
	fmt.Fprintf(&table, "\nright: emulated screen %d/%d, tail 8 KB %d/%d\n", screenRight, len(cases), tailRight, len(cases))
	t.Log("\n" + table.String())
	if out := os.Getenv("CORRAL_STUDY_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// claudeMarkerCases samples each Claude Code .screen.cast just before each
// marker's interval ends (the screen has settled), for markers a screen
// can judge.
func claudeMarkerCases(t *testing.T) []studyCase {
	files, _ := filepath.Glob(filepath.Join(castDir, "claude-code", "*.screen.cast"))
	var out []studyCase
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := Parse(data, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		markers := rec.Markers()
		for i, m := range markers {
			if i+1 >= len(markers) {
				break
			}
			state, kind := markerTruth(m.Data)
			if state == "" {
				continue
			}
			at := markers[i+1].At - time.Millisecond
			var outBytes []byte
			for _, ev := range rec.Events {
				if ev.At > at {
					break
				}
				if ev.Code == "o" {
					outBytes = append(outBytes, ev.Data...)
				}
			}
			name := fmt.Sprintf("%s@%05.2fs", strings.TrimSuffix(filepath.Base(f), ".screen.cast"), m.At.Seconds())
			out = append(out, studyCase{name: name, agent: "claude-code", rows: rec.Rows, output: outBytes, want: state, kind: kind, rec: rec, at: at})
		}
	}
	return out
}

// markerTruth maps a marker to what a screen can show: done reads as idle;
// clear (exit) is not judged.
func markerTruth(marker string) (combine.State, string) {
	body := strings.TrimPrefix(marker, "state=")
	st, rest, _ := strings.Cut(body, ":")
	kind := strings.TrimPrefix(rest, "kind=")
	switch st {
	case "clear":
		return "", ""
	case "done":
		return combine.Idle, ""
	}
	return combine.State(st), kind
}

func verdictAgrees(v rules.Verdict, want combine.State, kind string) bool {
	return string(v.State) == string(want) && v.Kind == kind
}

func label(state, kind string) string {
	if kind != "" {
		return state + "/" + kind
	}
	return state
}

func mark(v rules.Verdict, ok bool) string {
	s := label(string(v.State), v.Kind)
	if !ok {
		s += " ✗"
	}
	return s
}

// lastTitle is the last OSC 0/2 title in the bytes, as a byte-level
// detector would find it.
func lastTitle(b []byte) string {
	s := string(b)
	best, title := -1, ""
	for _, p := range []string{"\x1b]0;", "\x1b]2;"} {
		if i := strings.LastIndex(s, p); i > best {
			rest := s[i+len(p):]
			end := strings.IndexAny(rest, "\a\x1b")
			if end >= 0 {
				best, title = i, rest[:end]
			}
		}
	}
	return title
}
