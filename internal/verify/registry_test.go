package verify

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/corral-dev/corral/internal/agentdef"
)

// Every [verify] home an agent.toml names has its Go part in homes, and
// every Go part is named; the profiles carry the data as written.
func TestProfilesFromTheRegistry(t *testing.T) {
	r := agentdef.BuiltIn()
	used := map[string]bool{}
	for _, a := range r.All() {
		if a.Verify.Home == "" {
			continue
		}
		used[a.Verify.Home] = true
		if homes[a.Verify.Home] == nil {
			t.Errorf("%s: [verify] home %q has no function in internal/verify's homes", a.Source, a.Verify.Home)
		}
	}
	for name := range homes {
		if !used[name] {
			t.Errorf("homes[%q] is named by no agent.toml", name)
		}
	}
	variants, scenariosUsed := 0, map[string]bool{}
	for _, a := range r.All() {
		for _, v := range a.Verify.Variants {
			variants++
			if v.Scenario == "" {
				continue
			}
			scenariosUsed[v.Scenario] = true
			if scenarios[v.Scenario] == nil {
				t.Errorf("%s: [[verify.variant]] %s: scenario %q has no steps in internal/verify's scenarios", a.Source, v.Name, v.Scenario)
			}
		}
	}
	for name := range scenarios {
		if !scenariosUsed[name] {
			t.Errorf("scenarios[%q] is named by no agent.toml", name)
		}
	}
	if got, want := len(Profiles()), len(r.All())+variants+1; got != want {
		t.Errorf("%d profiles, want the %d agents, their %d variants and the fake agent", got, want, variants)
	}
	for _, p := range Profiles() {
		if p.bad != nil {
			t.Errorf("%s: %v", p.Name, p.bad)
		}
	}
	p, err := ProfileFor("crush", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Latency != 700*time.Millisecond || p.Keys[KeyInterrupt] != "\x1b"+pause+"\x1b" || p.API != APIChat ||
		p.Prelude["Would you like to initialize this project?"] != "n" || p.Home == nil || p.Version != "0.90.0" || p.Rules != "crush" {
		t.Errorf("crush's profile %+v", p)
	}
	if p, _ := ProfileFor("claude", nil); p == nil || p.Name != "claude-code" || !p.Reports || p.Args[0] != "--permission-mode" {
		t.Errorf("claude's profile %+v", p)
	}
	// Claude Code as users start it: no arguments, its auto-mode footer,
	// its own scenario; the rest is Claude Code's.
	if p, _ := ProfileFor("claude-code-auto", nil); p == nil || len(p.Args) != 0 || p.Ready != "auto mode on" || p.Rules != "claude-code" ||
		p.Binary != "claude" || !p.Reports || p.Home == nil || p.API != APIAnthropic || len(p.Scenario) == 0 || p.Scenario[0].Name != "startup" {
		t.Errorf("claude-code-auto's profile %+v", p)
	}
}

// A variant whose scenario has no steps says so when it runs, naming
// the file.
func TestVariantWithoutItsScenario(t *testing.T) {
	const data = "name = \"x\"\ntitle = \"X\"\nbinary = \"x\"\n[install]\nnpm = \"x\"\nverified = \"1.0.0\"\n" +
		"[verify]\napi = \"openai-chat\"\nready = \"> \"\n[[verify.variant]]\nname = \"y\"\nscenario = \"nowhere\"\n"
	r, err := agentdef.Load(fstest.MapFS{"x/agent.toml": {Data: []byte(data)}, "x/rules.toml": {}}, "t/")
	if err != nil {
		t.Fatal(err)
	}
	ps := profilesOf(r)
	if len(ps) != 2 || ps[1].Name != "x-y" {
		t.Fatalf("profiles %+v", ps)
	}
	_, _, err = Run(context.Background(), Options{Profile: ps[1]})
	if err == nil || !strings.Contains(err.Error(), `t/x/agent.toml: [[verify.variant]] "x-y": scenario "nowhere" has no Go part`) {
		t.Errorf("run: %v", err)
	}
}

// A profile whose home has no Go part says so when it runs, naming the file.
func TestProfileWithoutItsHome(t *testing.T) {
	const data = "name = \"x\"\ntitle = \"X\"\nbinary = \"x\"\n[install]\nnpm = \"x\"\nverified = \"1.0.0\"\n" +
		"[verify]\napi = \"openai-chat\"\nready = \"> \"\nhome = \"nowhere\"\n"
	a, err := agentdef.Parse("t/x/agent.toml", "x", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	r, err := agentdef.Load(fstest.MapFS{"x/agent.toml": {Data: []byte(data)}, "x/rules.toml": {}}, "t/")
	if err != nil {
		t.Fatal(err)
	}
	ps := profilesOf(r)
	if len(ps) != 1 || ps[0].Home == nil {
		t.Fatalf("profiles %+v of %+v", ps, a)
	}
	if _, err := ps[0].Home("", "", ""); err == nil || !strings.Contains(err.Error(), `t/x/agent.toml: [verify] home "nowhere" has no Go part`) {
		t.Errorf("home: %v", err)
	}
}

// The headless suites are those of the agents whose agent.toml gives a
// headless stream: one each.
func TestHeadlessSuitesMatchTheRegistry(t *testing.T) {
	r := agentdef.BuiltIn()
	var suites, want []string
	for _, h := range HeadlessAgents {
		suites = append(suites, h.Profile)
	}
	for _, a := range r.All() {
		if a.Headless.Exec != "" {
			want = append(want, a.Name)
		}
	}
	slices.Sort(suites)
	if !slices.Equal(suites, want) {
		t.Errorf("headless suites for %v; agents with [headless] %v", suites, want)
	}
}
