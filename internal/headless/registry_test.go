package headless

import (
	"slices"
	"testing"

	"github.com/corral-dev/corral/internal/agentdef"
)

// Every dialect the registry allows is a format this package parses, and
// each agent's exec name reads its stream in the dialect its agent.toml
// gives.
func TestDialectsMatchTheRegistry(t *testing.T) {
	formats := []string{FormatClaude, FormatCodex, FormatGemini}
	if !slices.Equal(slices.Sorted(slices.Values(agentdef.Dialects)), slices.Sorted(slices.Values(formats))) {
		t.Errorf("agentdef.Dialects %v, the formats here %v", agentdef.Dialects, formats)
	}
	r := agentdef.BuiltIn()
	for _, a := range r.All() {
		if a.Headless.Exec == "" {
			continue
		}
		if got := FormatOf(a.Headless.Exec); got != a.Headless.Dialect {
			t.Errorf("%s: exec %q reads as %q here, dialect %q there", a.Source, a.Headless.Exec, got, a.Headless.Dialect)
		}
	}
	for _, name := range []string{"claude", "qwen", "codex", "gemini"} {
		if _, ok := r.ByExec(name); !ok {
			t.Errorf("FormatOf knows %q; no agent.toml has it as its exec name", name)
		}
	}
}
