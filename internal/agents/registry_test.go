package agents

import (
	"slices"
	"testing"

	"github.com/corral-dev/corral/internal/agentdef"
)

// Each hooks integration an agent.toml names is one of these, for the
// same package and binary; and each of these is named by one agent.
func TestIntegrationsMatchTheRegistry(t *testing.T) {
	named := map[string]*agentdef.Agent{}
	for _, a := range agentdef.BuiltIn().All() {
		if a.Hooks.Integration != "" {
			named[a.Hooks.Integration] = a
		}
	}
	for _, in := range Integrations() {
		a, ok := named[in.Name]
		if !ok {
			t.Errorf("integration %s: no agent.toml names it in [hooks]", in.Name)
			continue
		}
		delete(named, in.Name)
		if a.Install.NPM != in.Package || !slices.Contains(in.Binaries, a.Binary) {
			t.Errorf("integration %s finds %s %v; %s is %s, binary %s", in.Name, in.Package, in.Binaries, a.Source, a.Install.NPM, a.Binary)
		}
		if f := Find([]string{a.Binary}); f.Agent != in.Name {
			t.Errorf("Find(%s) = %q, want %s", a.Binary, f.Agent, in.Name)
		}
	}
	for name, a := range named {
		t.Errorf("%s: [hooks] integration %q has no Go part in internal/agents", a.Source, name)
	}
}
