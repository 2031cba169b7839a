package rules

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rulesdata "github.com/corral-dev/corral/agents"
)

// liveDir holds screens captured from the real agent CLIs running in corral
// panes against a loopback model server: for each agent, phases.json lists
// each screen with the state, kind and message it must get, and the
// recordings (asciicast v2) the screens were taken from.
const liveDir = "../../testdata/live"

var liveAgents = []string{"codex", "qwen-code", "opencode", "copilot"}

type livePhase struct {
	Screen    string `json:"screen"`
	Recording string `json:"recording"`
	Marker    string `json:"marker"`
	State     State  `json:"state"`
	Kind      string `json:"kind"`
	Message   string `json:"message"`
}

func embeddedSet(t *testing.T) *Set {
	t.Helper()
	set, errs := Loader{Embedded: rulesdata.Rules}.Load(nil)
	if len(errs) > 0 {
		t.Fatalf("embedded rules: %v", errs)
	}
	return set
}

func liveManifest(t *testing.T, set *Set, agent string) *Manifest {
	t.Helper()
	m, ok := set.ByName(agent)
	if !ok {
		t.Fatalf("no embedded manifest %q", agent)
	}
	return m
}

func readLiveScreen(t *testing.T, agent, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(liveDir, agent, name+".screen.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

// Every live screen gets the state, kind and message a person reading it
// would give.
func TestLiveScreens(t *testing.T) {
	set := embeddedSet(t)
	for _, agent := range liveAgents {
		m := liveManifest(t, set, agent)
		data, err := os.ReadFile(filepath.Join(liveDir, agent, "phases.json"))
		if err != nil {
			t.Fatal(err)
		}
		var phases []livePhase
		if err := json.Unmarshal(data, &phases); err != nil {
			t.Fatalf("%s/phases.json: %v", agent, err)
		}
		if len(phases) == 0 {
			t.Fatalf("%s/phases.json lists no screens", agent)
		}
		for _, p := range phases {
			t.Run(agent+"/"+p.Screen, func(t *testing.T) {
				if _, err := os.Stat(filepath.Join(liveDir, agent, p.Recording)); err != nil {
					t.Errorf("recording: %v", err)
				}
				v := m.Classify(Screen{Lines: readLiveScreen(t, agent, p.Screen)})
				if v.State != p.State || v.Kind != p.Kind || v.Message != p.Message {
					t.Errorf("%s/%s = %s/%s %q (rule %q), want %s/%s %q", agent, p.Screen, v.State, v.Kind, v.Message, v.Rule,
						p.State, p.Kind, p.Message)
				}
			})
		}
	}
}

// A prompt whose question has scrolled off or wrapped, or whose selection
// has moved, is still a block, and still says what it asks.
func TestLiveScreensChanged(t *testing.T) {
	set := embeddedSet(t)
	tests := []struct {
		agent, screen string
		drop          string            // lines holding this are dropped
		edit          *strings.Replacer // applied to every line; "\n" splits one
		rule, msg     string
	}{
		{"codex", "approval_shell", "Would you like to", nil, "approval_footer", "$ touch corral-shell.txt"},
		{"codex", "approval_edit", "Would you like to", nil, "approval_footer", "Destination: /tmp/lr/codex/proj/corral-mock.txt"},
		{"codex", "approval_shell", "", strings.NewReplacer("› 1. Yes", "  1. Yes", "  2. Yes", "› 2. Yes"), "approval", "Would you like to run the following command?"},
		{"qwen-code", "approval_shell", "Allow execution of", nil, "waiting_confirmation", "Waiting for user confirmation"},
		{"copilot", "approval_shell", "", strings.NewReplacer("❯ 1. Yes", "  1. Yes", "  2. Yes", "❯ 2. Yes"), "permission", "Do you want to run this command?"},
		{"copilot", "approval_edit", "", strings.NewReplacer("/tmp/lr/cp/proj/corral-mock.txt?", "/tmp/lr/cp/proj/a/long/path/\n│ corral-mock.txt?"),
			"permission_wrapped", "Do you want to create /tmp/lr/cp/proj/a/long/path/"},
	}
	for _, tt := range tests {
		t.Run(tt.agent+"/"+tt.screen+"/"+tt.rule, func(t *testing.T) {
			var lines []string
			for _, l := range readLiveScreen(t, tt.agent, tt.screen) {
				if tt.drop != "" && strings.Contains(l, tt.drop) {
					continue
				}
				if tt.edit != nil {
					l = tt.edit.Replace(l)
				}
				lines = append(lines, strings.Split(l, "\n")...)
			}
			v := liveManifest(t, set, tt.agent).Classify(Screen{Lines: lines})
			if v.State != Blocked || v.Rule != tt.rule || v.Message != tt.msg {
				t.Errorf("got %s rule %q msg %q, want blocked rule %q msg %q", v.State, v.Rule, v.Message, tt.rule, tt.msg)
			}
		})
	}
}

// A blocked pane always says what it asks: every blocked rule of these
// manifests captures a message.
func TestBlockedRulesHaveMessages(t *testing.T) {
	set := embeddedSet(t)
	for _, agent := range append(liveAgents, "generic") {
		for _, r := range liveManifest(t, set, agent).Rules {
			if r.State == Blocked && r.msgGroup < 0 {
				t.Errorf("%s rule %q is blocked but has no (?P<msg>…) group", agent, r.ID)
			}
		}
	}
}

// Identifying a screen that shows no known agent (a shell's, a spinner's:
// read at every classification of such a pane) joins its rows once, not
// once a manifest: one allocation whatever the number of agents, and the
// answer each manifest gives alone.
func TestIdentifyScreenJoinsOnce(t *testing.T) {
	set := embeddedSet(t)
	lines := make([]string, 24)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d of the scrollback", i)
	}
	lines[23] = "| working (12)"
	for _, tc := range []struct {
		name  string
		scr   Screen
		agent string
	}{
		{"a shell", Screen{Lines: lines}, ""},
		{"a shell, titled", Screen{Lines: lines, Title: "bash"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if m := set.IdentifyScreen(tc.scr); m != nil {
				got = m.Name
			}
			alone := ""
			for _, n := range set.order {
				if m := set.byName[n]; n != Generic && m.MatchesScreen(tc.scr) {
					alone = n
					break
				}
			}
			if got != tc.agent || alone != tc.agent {
				t.Fatalf("identified %q (each manifest alone: %q), want %q", got, alone, tc.agent)
			}
			if raceBuild {
				return // the race detector's instrumentation allocates too
			}
			if n := testing.AllocsPerRun(20, func() { set.IdentifyScreen(tc.scr) }); n > 1 {
				t.Fatalf("IdentifyScreen allocated %.0f times, want at most 1 (the rows joined once)", n)
			}
		})
	}
}

// raceBuild is set in a build with the race detector (race_test.go).
var raceBuild bool
