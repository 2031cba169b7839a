package rules

import (
	"errors"
	rulesdata "github.com/corral-dev/corral/agents"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

const goodManifest = `
name = "toy"
[detect]
process = ["toy"]
argv = ['toy\.js']
title = '^Toy'
[answers]
option = "{n}"
yes = "y"
[[rule]]
id = "ask"
state = "blocked"
kind = "permission"
region = "below_last_rule"
pattern = '(?P<msg>Run [^?]+\?)'
[[rule]]
id = "busy"
state = "working"
region = "bottom:1"
pattern = 'esc to stop'
`

func mustParse(t *testing.T, src string) *Manifest {
	t.Helper()
	m, err := Parse("toy.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestClassify(t *testing.T) {
	m := mustParse(t, goodManifest)
	rule := strings.Repeat("─", 20)
	tests := []struct {
		name  string
		lines []string
		state State
		rule  string
		msg   string
	}{
		{"prompt below the rule", []string{"output", rule, "Run ls -la?", "1. yes"}, Blocked, "ask", "Run ls -la?"},
		// An answered prompt that is now above the input box's rule is history.
		{"prompt above the rule is history", []string{"Run ls -la?", rule, "> "}, Idle, "", ""},
		{"working footer", []string{"text", "", "  esc to stop  ", "", ""}, Working, "busy", ""},
		{"bottom counts non-empty rows only", []string{"esc to stop", "last"}, Idle, "", ""},
		{"nothing matched is idle, never blocked", []string{"Run ls?"}, Idle, "", ""},
		{"empty screen", nil, Idle, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := m.Classify(Screen{Lines: tt.lines})
			if v.State != tt.state || v.Rule != tt.rule || v.Message != tt.msg {
				t.Fatalf("Classify = %+v, want %s rule %q msg %q", v, tt.state, tt.rule, tt.msg)
			}
		})
	}
}

func TestRegions(t *testing.T) {
	lines := []string{"a", "╭──────────────╮", "b", "──────────────", "c", "", "d", ""}
	v := newView(Screen{Lines: lines, Title: "  T  "})
	tests := []struct {
		region string
		want   string
	}{
		{"screen", strings.Join(lines, "\n")},
		{"bottom:1", "d"},
		{"bottom:2", "c\nd"},
		{"bottom:50", strings.Join([]string{"a", "╭──────────────╮", "b", "──────────────", "c", "d"}, "\n")},
		{"below_last_rule", "c\n\nd\n"},
		{"above_last_rule", "a\n╭──────────────╮\nb"},
		{"title", "T"},
	}
	for _, tt := range tests {
		r, err := ParseRegion(tt.region)
		if err != nil {
			t.Fatal(err)
		}
		if r.String() != tt.region {
			t.Errorf("String() = %q, want %q", r.String(), tt.region)
		}
		if got := v.text(r); got != tt.want {
			t.Errorf("%s = %q, want %q", tt.region, got, tt.want)
		}
	}
	for _, bad := range []string{"bottom:0", "bottom:x", "bottom:201", "middle"} {
		if _, err := ParseRegion(bad); err == nil {
			t.Errorf("ParseRegion(%q) accepted", bad)
		}
	}
	if got := newView(Screen{Lines: []string{"x"}}).text(Region{Kind: RegionBelowLastRule}); got != "" {
		t.Errorf("below_last_rule without a rule = %q, want empty", got)
	}
}

func TestIsHorizontalRule(t *testing.T) {
	for line, want := range map[string]bool{
		strings.Repeat("─", 30):             true,
		"  " + strings.Repeat("╌", 12):      true,
		strings.Repeat("▀", 40):             true,
		strings.Repeat("─", 9):              false,
		"╭" + strings.Repeat("─", 30) + "╮": false,
		"── title ──────────────":           false,
		strings.Repeat("-", 30):             false,
	} {
		if got := IsHorizontalRule(line); got != want {
			t.Errorf("IsHorizontalRule(%q) = %v", line, got)
		}
	}
}

func TestKeysAndIdentify(t *testing.T) {
	m := mustParse(t, goodManifest)
	for choice, want := range map[string]string{"yes": "y", "2": "2", "10": "10"} {
		if got, ok := m.Keys(choice); !ok || got != want {
			t.Errorf("Keys(%q) = %q, %v", choice, got, ok)
		}
	}
	for _, choice := range []string{"no", "always", "x1", "", "1234"} {
		if _, ok := m.Keys(choice); ok {
			t.Errorf("Keys(%q) defined", choice)
		}
	}
	// A prompt's own keys come first; the manifest's fill in the rest.
	p, err := Parse("p.toml", []byte("name = \"p\"\n[answers]\nyes = \"\\r\"\nno = \"n\"\noption = \"{n}\"\n"+
		"[[rule]]\nid = \"approval\"\nstate = \"blocked\"\npattern = 'Allow'\nanswers = { yes = \"y\", option = \"o{n}\" }\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ rule, choice, want string }{
		{"approval", "yes", "y"}, {"approval", "no", "n"}, {"approval", "3", "o3"}, {"", "yes", "\r"}, {"other", "3", "3"},
	} {
		if got, ok := p.KeysFor(tt.rule, tt.choice); !ok || got != tt.want {
			t.Errorf("KeysFor(%q, %q) = %q, %v; want %q", tt.rule, tt.choice, got, ok, tt.want)
		}
	}
	// A prompt that takes only its own answers refuses the manifest's.
	only, err := Parse("o.toml", []byte("name = \"o\"\n[answers]\nyes = \"1\"\nalways = \"2\"\noption = \"{n}\"\n"+
		"[[rule]]\nid = \"notice\"\nstate = \"blocked\"\npattern = 'Enter to continue'\nanswers = { yes = \"\\r\" }\nanswers_only = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := only.KeysFor("notice", "yes"); !ok || k != "\r" {
		t.Errorf("KeysFor(notice, yes) = %q, %v; want \\r", k, ok)
	}
	for _, choice := range []string{"always", "1", "no"} {
		if k, ok := only.KeysFor("notice", choice); ok {
			t.Errorf("KeysFor(notice, %q) = %q; want refused (answers_only)", choice, k)
		}
	}
	if k, ok := only.KeysFor("", "always"); !ok || k != "2" {
		t.Errorf("KeysFor(\"\", always) = %q, %v; want the manifest's 2", k, ok)
	}
	if !m.MatchesProcess("toy", nil) || !m.MatchesProcess("node", []string{"node", "/opt/toy.js"}) || m.MatchesProcess("node", []string{"node", "x.js"}) {
		t.Error("MatchesProcess")
	}
	// A name longer than the kernel keeps matches by the part it keeps.
	long := &Manifest{Processes: []string{"toy-agent-insiders", "to"}}
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"toy-agent-insiders", true},
		{"toy-agent-insid", true},   // Linux's 15 bytes
		{"toy-agent-insidx", false}, // not its start
		{"toy-agent", false},        // not cut: another program
		{"t", false},                // short names are whole
		{"to", true},
	} {
		if got := long.MatchesProcess(tc.name, nil); got != tc.want {
			t.Errorf("MatchesProcess(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !m.MatchesScreen(Screen{Title: "Toy — working  "}) || m.MatchesScreen(Screen{Title: "a Toy"}) {
		t.Error("MatchesScreen")
	}
}

// Each broken manifest is refused with file:line:column and a message
// that names the problem.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		loc     string // "line:col" expected in the error
		message string
	}{
		{"unknown key", "name = \"x\"\n[[rule]]\nid = \"a\"\nstate = \"idle\"\npatern = 'x'\n", "5:1", `unknown key "rule.patern"`},
		{"TOML syntax", "name = \"x\"\n[[rule]\n", "2:", "expected"},
		{"bad regex", "name = \"x\"\n\n[[rule]]\nid = \"a\"\nstate = \"idle\"\npattern = '(unclosed'\n", "6:1", "rule a: bad pattern"},
		{"bad state", "name = \"x\"\n[[rule]]\nid = \"a\"\n  state = \"sleeping\"\npattern = 'x'\n", "4:3", `state "sleeping"`},
		{"kind on working", "name = \"x\"\n[[rule]]\nid = \"a\"\nstate = \"working\"\nkind = \"permission\"\npattern = 'x'\n", "5:1", "kind is only for blocked"},
		{"bad region", "name = \"x\"\n[[rule]]\nid = \"a\"\nstate = \"idle\"\nregion = \"bottom:0\"\npattern = 'x'\n", "5:1", "bottom:N"},
		{"duplicate id", "name = \"x\"\n[[rule]]\nid = \"a\"\nstate = \"idle\"\npattern = 'x'\n[[rule]]\nid = \"a\"\nstate = \"idle\"\npattern = 'y'\n", "7:1", "duplicate id"},
		{"missing pattern", "name = \"x\"\n[[rule]]\nid = \"a\"\nstate = \"idle\"\n", "2:1", "pattern is required"},
		{"bad name", "name = \"X Y\"\n", "1:1", "name"},
		{"unknown answer", "name = \"x\"\n[answers]\nmaybe = \"m\"\n", "3:1", "unknown answer"},
		{"option without {n}", "name = \"x\"\n[answers]\noption = \"1\"\n", "3:1", "{n}"},
		{"bad duration", "name = \"x\"\n[timing]\nidle_confirm = \"soon\"\n", "3:1", "idle_confirm"},
		{"bad settle", "name = \"x\"\n[timing]\nanswer_settle = \"9s\"\n", "3:1", "answer_settle"},
		{"answers on idle", "name = \"x\"\n[[rule]]\nid = \"a\"\nstate = \"idle\"\npattern = 'x'\nanswers = { yes = \"y\" }\n", "6:1", "answers are only for blocked"},
		{"bad rule answer", "name = \"x\"\n[[rule]]\nid = \"a\"\nstate = \"blocked\"\npattern = 'x'\nanswers = { yes = \"\" }\n", "6:1", "rule a: answers.yes"},
		{"answers_only without answers", "name = \"x\"\n[[rule]]\nid = \"a\"\nstate = \"blocked\"\npattern = 'x'\nanswers_only = true\n", "6:1", "rule a: answers_only needs answers"},
		{"pattern too long", "name = \"x\"\n[[rule]]\nid = \"a\"\nstate = \"idle\"\npattern = '" + strings.Repeat("a", MaxPatternBytes+1) + "'\n", "5:1", "limit"},
		// There is no key that runs a program: any attempt is an unknown key.
		{"no commands", "name = \"x\"\nexec = \"rm -rf /\"\n", "2:1", `unknown key "exec"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := refused(t, tt.src, tt.loc, tt.message)
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("error %T is not a *rules.Error", err)
			}
		})
	}
}

// refused parses src as f.toml and fails the test unless it is refused
// with an error at f.toml:loc that says message; it returns the error.
func refused(t *testing.T, src, loc, message string) error {
	t.Helper()
	_, err := Parse("f.toml", []byte(src))
	if err == nil {
		t.Fatal("accepted")
	}
	if !strings.Contains(err.Error(), "f.toml:"+loc) || !strings.Contains(err.Error(), message) {
		t.Fatalf("error %q: want f.toml:%s and %q", err, loc, message)
	}
	return err
}

func TestEmbeddedManifestsLoad(t *testing.T) {
	set, errs := Loader{Embedded: rulesdata.RulesView{Agents: os.DirFS("../../agents")}}.Load(nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := []string{"claude-code", "codex", "copilot", "crush", "gemini", "opencode", "qwen-code", "generic"}
	if got := strings.Join(set.Names(), ","); got != strings.Join(want, ",") {
		t.Fatalf("names = %s", got)
	}
	for _, m := range set.All() {
		if len(m.Rules) == 0 {
			t.Errorf("%s has no rules", m.Name)
		}
		// Blocked rules come first: a later working rule must never hide a prompt.
		seenOther := false
		for _, r := range m.Rules {
			if r.State != Blocked {
				seenOther = true
			} else if seenOther {
				t.Errorf("%s: blocked rule %s after a non-blocked rule", m.Name, r.ID)
			}
		}
	}
	if m := set.IdentifyProcess("node", []string{"node", "/usr/lib/node_modules/@google/gemini-cli/dist/index.js"}); m == nil || m.Name != "gemini" {
		t.Errorf("gemini by argv: %v", m)
	}
	if m := set.IdentifyProcess("claude", nil); m == nil || m.Name != "claude-code" {
		t.Errorf("claude by name: %v", m)
	}
	if m := set.IdentifyProcess("bash", []string{"bash"}); m != nil {
		t.Errorf("bash identified as %s", m.Name)
	}
}

func embedded() fstest.MapFS {
	return fstest.MapFS{"toy.toml": {Data: []byte(goodManifest)}}
}

// A user file overrides the embedded manifest of the same name; a broken
// one is reported and the rules in force stay.
func TestUserOverride(t *testing.T) {
	dir := t.TempDir()
	l := Loader{Embedded: embedded(), UserDir: dir}
	set, errs := l.Load(nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if m, _ := set.ByName("toy"); m.Source != "embedded:toy.toml" {
		t.Fatalf("source %s", m.Source)
	}
	override := strings.Replace(goodManifest, "esc to stop", "busy now", 1)
	write(t, filepath.Join(dir, "toy.toml"), override)
	set2, errs := l.Load(set)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	m2, _ := set2.ByName("toy")
	if m2.Source != filepath.Join(dir, "toy.toml") || m2.Classify(Screen{Lines: []string{"busy now"}}).State != Working {
		t.Fatalf("override not in force: %s", m2.Source)
	}
	write(t, filepath.Join(dir, "toy.toml"), "name = \"toy\"\n[[rule]]\nid = \"a\"\nstate = \"nope\"\npattern = 'x'\n")
	set3, errs := l.Load(set2)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "toy.toml:4:1") {
		t.Fatalf("errs = %v", errs)
	}
	if m3, _ := set3.ByName("toy"); m3 != m2 {
		t.Fatal("the previous manifest did not stay in force")
	}
	write(t, filepath.Join(dir, "other.toml"), strings.Replace(goodManifest, `name = "toy"`, `name = "toy"`, 1))
	_, errs = l.Load(set3)
	if len(errs) != 2 {
		t.Fatalf("a file whose name differs from its manifest must be refused: %v", errs)
	}
}

// A reload takes the embedded manifests of the set before as they are
// (they are compiled once a daemon), and still lets a user file override
// one and its removal bring the built-in back.
func TestLoadKeepsEmbedded(t *testing.T) {
	dir := t.TempDir()
	l := Loader{Embedded: rulesdata.Rules, UserDir: dir}
	set, errs := l.Load(nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	builtin, _ := set.ByName("codex")
	again, _ := l.Load(set)
	if m, _ := again.ByName("codex"); m != builtin {
		t.Fatal("the embedded manifest was compiled again")
	}
	write(t, filepath.Join(dir, "codex.toml"), strings.Replace(goodManifest, `name = "toy"`, `name = "codex"`, 1))
	user, errs := l.Load(again)
	if m, _ := user.ByName("codex"); len(errs) > 0 || m.Source != filepath.Join(dir, "codex.toml") {
		t.Fatalf("the user's file is not in force: %v %v", m.Source, errs)
	}
	if err := os.Remove(filepath.Join(dir, "codex.toml")); err != nil {
		t.Fatal(err)
	}
	back, _ := l.Load(user)
	if m, _ := back.ByName("codex"); m != builtin {
		t.Fatalf("the built-in manifest is not back: %v", m.Source)
	}
	// A file system that cannot be compared is read again.
	toys := Loader{Embedded: embedded()}
	first, _ := toys.Load(nil)
	second, _ := toys.Load(first)
	if a, _ := first.ByName("toy"); a == nil || a == second.byName["toy"] {
		t.Fatal("a map file system's manifests were taken as unchanged")
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(goodManifest)
	f.Add("name = \"x\"\n[[rule]]\nid = \"a\"\nstate = \"blocked\"\nkind = \"auth\"\npattern = '(?i)password:'\n")
	f.Add("[[rule]]\n[[rule]]\n")
	f.Fuzz(func(t *testing.T, src string) {
		m, err := Parse("fuzz.toml", []byte(src))
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.toml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(m.Rules) > MaxRules {
			t.Fatalf("%d rules", len(m.Rules))
		}
		m.Classify(Screen{Lines: []string{src}, Title: src})
	})
}

func TestRequiredLiteral(t *testing.T) {
	tests := map[string]string{
		`(?s)(?P<msg>Do you want to [^\n]*?\?).*\n\s*❯?\s*1\. Yes.*Esc to cancel`:         "Do you want to ",
		`(?s)(?P<msg>(Allow execution of[^\n│]*?|Apply this change)\?).*● 1\. Allow once`: "● 1. Allow once",
		`esc to interrupt`:      "esc to interrupt",
		`(?i)password:`:         "",
		`a|bcd`:                 "",
		`(?m)^\S Working \(.*x`: " Working (",
		`x+`:                    "",
	}
	for pattern, want := range tests {
		if got := requiredLiteral(pattern); got != want {
			t.Errorf("requiredLiteral(%q) = %q, want %q", pattern, got, want)
		}
	}
}
