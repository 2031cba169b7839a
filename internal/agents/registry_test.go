package agents

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/corral-dev/corral/internal/agentdef"
)

// Each hooks integration an agent.toml names has its Go part here, and
// each Go part is named by one agent; corral finds each in a command line
// by the agent's binary and package.
func TestIntegrationsMatchTheRegistry(t *testing.T) {
	named := map[string]*agentdef.Agent{}
	for _, a := range agentdef.BuiltIn().All() {
		if a.Hooks.Integration == "" {
			continue
		}
		named[a.Hooks.Integration] = a
		if _, ok := byArgv[a.Hooks.Integration]; !ok {
			t.Errorf("%s: [hooks] integration %q has no Go part in internal/agents (byArgv)", a.Source, a.Hooks.Integration)
		}
	}
	for name := range byArgv {
		if named[name] == nil {
			t.Errorf("integration %s: no agent.toml names it in [hooks]", name)
		}
	}
	if got := len(Integrations()); got != len(byArgv) {
		t.Errorf("%d integrations, %d Go parts", got, len(byArgv))
	}
	for _, in := range Integrations() {
		a := named[in.Name]
		for _, argv := range [][]string{{a.Binary, "-x"}, {"npx", a.Install.NPM}} {
			if f := Find(argv); f.Agent != in.Name {
				t.Errorf("Find(%q) = %q, want %s", argv, f.Agent, in.Name)
			}
		}
	}
}

// An agent whose integration has no Go part is not integrated.
func TestKnownOf(t *testing.T) {
	const agent = "name = \"NAME\"\ntitle = \"T\"\nbinary = \"NAME\"\n[install]\nnpm = \"@x/NAME\"\nverified = \"1.0.0\"\n" +
		"[hooks]\nintegration = \"INTEGRATION\"\nsummary = \"s\"\n[verify]\napi = \"openai-chat\"\nready = \"> \"\n"
	fsys := fstest.MapFS{}
	for _, a := range []struct{ name, integration string }{{"claude-code", "claude-code"}, {"gemini", "gemini"}, {"other", "other"}} {
		fsys[a.name+"/agent.toml"] = &fstest.MapFile{Data: []byte(strings.NewReplacer("NAME", a.name, "INTEGRATION", a.integration).Replace(agent))}
		fsys[a.name+"/rules.toml"] = &fstest.MapFile{}
	}
	r, err := agentdef.Load(fsys, "t/")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range knownOf(r) {
		got = append(got, k.name)
		if k.byArgv != (k.name == "claude-code") || k.pkg != "@x/"+k.name || !slices.Equal(k.bins, []string{k.name}) {
			t.Errorf("%+v", k)
		}
	}
	if !slices.Equal(got, []string{"claude-code", "gemini"}) {
		t.Errorf("known %v, want claude-code and gemini", got)
	}
}
