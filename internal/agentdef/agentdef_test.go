package agentdef

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	agentsdata "github.com/corral-dev/corral/agents"
	"github.com/corral-dev/corral/internal/rules"
)

const good = `name = "crush"
title = "Crush"
binary = "crush"

[install]
npm = "@charmland/crush"
verified = "0.90.0"

[verify]
api = "openai-chat"
ready = "ctrl+p commands"
home = "crush"
latency = "700ms"
keys = { interrupt = "\u001b{pause}\u001b" }
`

// variant is a [[verify.variant]] table for the tests, which go after
// good's last line.
const (
	last    = "keys = { interrupt = \"\\u001b{pause}\\u001b\" }"
	variant = "[[verify.variant]]\nname = \"auto\"\nscenario = \"auto\"\n"
)

func TestParse(t *testing.T) {
	a, err := Parse("x/crush/agent.toml", "crush", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if a.Verify.Latency != 700*time.Millisecond || a.Verify.Keys["interrupt"] != "\x1b{pause}\x1b" || a.Install.Verified != "0.90.0" {
		t.Errorf("parsed %+v", a)
	}
	// A variant is named after its agent and takes its ready text unless
	// it gives its own.
	a, err = Parse("x/crush/agent.toml", "crush", []byte(good+"\n"+variant+"args = []\n\n[[verify.variant]]\nname = \"tui\"\nready = \"> \"\nargs = [\"--tui\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v := a.Verify.Variants; len(v) != 2 || v[0].Name != "crush-auto" || v[0].Ready != "ctrl+p commands" || v[0].Scenario != "auto" || v[0].Args == nil ||
		v[1].Name != "crush-tui" || v[1].Ready != "> " || v[1].Args[0] != "--tui" || v[1].Scenario != "" {
		t.Errorf("variants %+v", v)
	}
	tests := []struct {
		name, edit, with, want string
	}{
		{"unknown key", `binary = "crush"`, "binary = \"crush\"\nbinaries = 1", `agent x/crush/agent.toml:4:1: unknown key [binaries]`},
		{"unknown table key", `home = "crush"`, "home = \"crush\"\nhomes = 1", `agent x/crush/agent.toml:13:1: unknown key [verify homes]`},
		{"syntax", `title = "Crush"`, `title = "Crush`, `agent x/crush/agent.toml:2:`},
		{"wrong folder", `name = "crush"`, `name = "charm"`, `agent x/crush/agent.toml:1: name: "charm" is not its folder's name "crush"`},
		{"bad name", `name = "crush"`, `name = "Crush"`, `:1: name: "Crush": lower-case`},
		{"no title", `title = "Crush"`, ``, `title: missing`},
		{"binary with a path", `binary = "crush"`, `binary = "/bin/crush"`, `:3: binary: "/bin/crush"`},
		{"no package", `npm = "@charmland/crush"`, ``, `npm: missing`},
		{"bad version", `verified = "0.90.0"`, `verified = "v0.90"`, `:7: verified: "v0.90": the version`},
		{"exec without dialect", `[verify]`, "[headless]\nexec = \"crush\"\n\n[verify]", `headless: exec and dialect go together`},
		{"exec auto", `[verify]`, "[headless]\nexec = \"auto\"\ndialect = \"claude\"\n\n[verify]", `:10: exec: "auto"`},
		{"unknown dialect", `[verify]`, "[headless]\nexec = \"crush\"\ndialect = \"acp\"\n\n[verify]", `:11: dialect: "acp": one of claude, codex, gemini`},
		{"resume without id", `[verify]`, "[restore]\nresume = [\"--resume\"]\n\n[verify]", `:10: resume: ["--resume"] has no {id}`},
		{"named_by without resume", `[verify]`, "[restore]\nnamed_by = [\"-r\"]\n\n[verify]", `restore: named_by and no_subcommand need resume`},
		{"unknown API", `api = "openai-chat"`, `api = "openai"`, `:10: api: "openai": one of`},
		{"integration without summary", `[verify]`, "[hooks]\nintegration = \"crush\"\n\n[verify]", `hooks: integration and summary go together`},
		{"no ready", `ready = "ctrl+p commands"`, ``, `ready: missing`},
		{"unknown key name", `keys = { interrupt`, `keys = { cancel`, `keys: "cancel": keys are yes, no, option, interrupt`},
		{"bad latency", `latency = "700ms"`, `latency = "a while"`, `:13: latency: "a while"`},
		{"latency too long", `latency = "700ms"`, `latency = "1m"`, `latency: "1m": a duration from 0s to 10s`},
		{"bad variant name", last, last + "\n\n[[verify.variant]]\nname = \"Auto\"", `:16: [[verify.variant]] "Auto": name: lower-case`},
		{"variant twice", last, last + "\n\n" + variant + "\n" + variant, `:20: [[verify.variant]] "auto": name: a second variant`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := strings.Replace(good, tt.edit, tt.with, 1)
			if data == good {
				t.Fatalf("the edit %q changed nothing", tt.edit)
			}
			_, err := Parse("x/crush/agent.toml", "crush", []byte(data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	other := strings.NewReplacer(`"crush"`, `"charm"`, `crush = `, ``).Replace(good)
	tests := []struct {
		name  string
		files map[string]string
		want  string // "" loads
	}{
		{"good", map[string]string{"crush/agent.toml": good, "crush/rules.toml": "", "generic/rules.toml": ""}, ""},
		{"no rules", map[string]string{"crush/agent.toml": good}, "agent x:crush: no rules.toml"},
		{"no agent.toml", map[string]string{"crush/rules.toml": ""}, "agent x:crush/agent.toml: open crush/agent.toml: file does not exist"},
		{"generic is no agent", map[string]string{"generic/agent.toml": good, "generic/rules.toml": ""}, "generic holds only a manifest"},
		{"same binary", map[string]string{"crush/agent.toml": good, "crush/rules.toml": "",
			"charm/agent.toml": strings.Replace(other, `binary = "charm"`, `binary = "crush"`, 1), "charm/rules.toml": ""}, `binary "crush" is charm's too`},
		{"same exec", map[string]string{
			"crush/agent.toml": good + "[headless]\nexec = \"x\"\ndialect = \"claude\"\n", "crush/rules.toml": "",
			"charm/agent.toml": other + "[headless]\nexec = \"x\"\ndialect = \"claude\"\n", "charm/rules.toml": ""}, `exec "x" is charm's too`},
		{"a variant named as an agent", map[string]string{
			"crush/agent.toml": good + "\n[[verify.variant]]\nname = \"x\"\n", "crush/rules.toml": "",
			"crush-x/agent.toml": strings.NewReplacer(`name = "crush"`, `name = "crush-x"`, `binary = "crush"`, `binary = "crushx"`).Replace(good), "crush-x/rules.toml": ""},
			`verify variant "crush-x" is an agent's name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, data := range tt.files {
				fsys[name] = &fstest.MapFile{Data: []byte(data)}
			}
			r, err := Load(fsys, "x:")
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want == "":
				if got := r.Names(); !slices.Equal(got, []string{"crush"}) {
					t.Errorf("names %v", got)
				}
			case err == nil || !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

// TestBuiltIn: every folder of agents/ is complete (an agent.toml and a
// rules.toml whose manifest has the folder's name), and the registry
// answers by name, binary and exec name.
func TestBuiltIn(t *testing.T) {
	r, err := Load(agentsdata.FS, "embedded:")
	if err != nil {
		t.Fatal(err)
	}
	set, errs := rules.Loader{Embedded: agentsdata.Rules}.Load(nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	dirs, _ := fs.ReadDir(agentsdata.FS, ".")
	var folders []string
	for _, d := range dirs {
		if d.IsDir() {
			folders = append(folders, d.Name())
		}
	}
	if want := append(r.Names(), NotAgents...); !sameSet(folders, want) {
		t.Errorf("folders %v, agents and manifests only %v", folders, want)
	}
	if !sameSet(set.Names(), folders) {
		t.Errorf("manifests %v, folders %v: each folder's rules.toml names its folder", set.Names(), folders)
	}
	if len(r.All()) < 7 {
		t.Errorf("%d agents; corral knew seven when the registry came", len(r.All()))
	}
	for _, tt := range []struct{ ask, want string }{{"claude-code", "claude-code"}, {"claude", "claude-code"}, {"qwen", "qwen-code"}, {"crush", "crush"}} {
		if a, ok := r.ByName(tt.ask); !ok || a.Name != tt.want {
			t.Errorf("ByName(%q) = %v, want %s", tt.ask, a, tt.want)
		}
	}
	if _, ok := r.ByName("generic"); ok {
		t.Error("generic is an agent")
	}
	if a, ok := r.ByExec("qwen"); !ok || a.Name != "qwen-code" || a.Headless.Dialect != "claude" {
		t.Errorf("ByExec(qwen) = %+v", a)
	}
	if got := r.ExecNames(); !slices.Equal(got, []string{"claude", "codex", "gemini", "qwen"}) {
		t.Errorf("exec names %v", got)
	}
	if BuiltIn().Names()[0] != r.Names()[0] {
		t.Error("BuiltIn differs from the embedded folder")
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}

func TestJoin(t *testing.T) {
	for _, tt := range []struct {
		words []string
		want  string
	}{{nil, ""}, {[]string{"a"}, "a"}, {[]string{"a", "b"}, "a or b"}, {[]string{"a", "b", "c"}, "a, b or c"}} {
		if got := Join(tt.words, "or"); got != tt.want {
			t.Errorf("Join(%q) = %q, want %q", tt.words, got, tt.want)
		}
	}
}

// The pages and recordings that list the agents list the registry's:
// docs/agents.md's Versions table (title, package, version) and its
// regenerate loop, docs/rules.md's list, and a recording of each in
// testdata/live/verify.
func TestDocsAgree(t *testing.T) {
	r := BuiltIn()
	agentsMD := readDoc(t, "../../docs/agents.md")
	_, versions, ok := strings.Cut(agentsMD, "\n## Versions\n")
	if !ok {
		t.Fatal("docs/agents.md has no Versions section")
	}
	versions, _, _ = strings.Cut(versions, "\n## ")
	row := regexp.MustCompile("(?m)^\\| ([^|]+) \\| `([^`]+)` \\| ([^ |]+) \\|")
	rows := row.FindAllStringSubmatch(versions, -1)
	if len(rows) != len(r.All()) {
		t.Errorf("docs/agents.md's Versions table has %d agents, the registry %d", len(rows), len(r.All()))
	}
	for _, a := range r.All() {
		i := slices.IndexFunc(rows, func(m []string) bool { return m[2] == a.Install.NPM })
		switch {
		case i < 0:
			t.Errorf("%s: docs/agents.md's Versions table has no row for %s", a.Source, a.Install.NPM)
		case rows[i][1] != a.Title || rows[i][3] != a.Install.Verified:
			t.Errorf("%s: %s %s verified; docs/agents.md says %s %s", a.Source, a.Title, a.Install.Verified, rows[i][1], rows[i][3])
		}
		profiles := []string{a.Name}
		for _, v := range a.Verify.Variants {
			profiles = append(profiles, v.Name)
		}
		for _, name := range profiles {
			if !regexp.MustCompile(`\nfor a in ([^\n]* )?` + name + `( [^\n]*)?; do`).MatchString(agentsMD) {
				t.Errorf("docs/agents.md's regenerate loop does not run %s", name)
			}
			if _, err := os.Stat(filepath.Join("../../testdata/live/verify", name, "run.json")); err != nil {
				t.Errorf("%s: no recording (corral verify --agent %s --record testdata/live/verify/%s): %v", a.Source, name, name, err)
			}
		}
	}
	rulesMD := strings.SplitN(readDoc(t, "../../docs/rules.md"), "\n\n", 3)[1] // after the title
	for _, name := range append(r.Names(), NotAgents...) {
		if !strings.Contains(rulesMD, "`"+name+"`") {
			t.Errorf("docs/rules.md's first paragraph does not name %s", name)
		}
	}
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
