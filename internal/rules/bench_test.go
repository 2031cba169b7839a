package rules

import (
	rulesdata "github.com/corral-dev/corral/agents"
	"os"
	"strings"
	"testing"
)

// A 32×120 Claude Code screen: transcript above, a permission prompt below.
func benchScreen(prompt bool) Screen {
	lines := make([]string, 0, 32)
	for i := 0; len(lines) < 16; i++ {
		lines = append(lines, "● Read internal/parser/lexer.go and updated the tokenizer so that nested quotes are handled; ran go test ./... again")
	}
	lines = append(lines, strings.Repeat("─", 120))
	if prompt {
		lines = append(lines, " Bash command", "", "   ls -la /tmp", "   List files in /tmp", "",
			" Do you want to proceed?", " ❯ 1. Yes", "   2. Yes, allow reading from /tmp from this project", "   3. No", "",
			" Esc to cancel · Tab to amend · ctrl+e to explain")
	} else {
		lines = append(lines, "❯ ", strings.Repeat("─", 120), "  ⏸ manual mode on · ? for shortcuts")
	}
	for len(lines) < 32 {
		lines = append(lines, "")
	}
	return Screen{Lines: lines, Title: "✳ Claude Code"}
}

func benchClassify(b *testing.B, agent string, s Screen, wantRule string) {
	set, errs := Loader{Embedded: rulesdata.RulesView{Agents: os.DirFS("../../agents")}}.Load(nil)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	m, _ := set.ByName(agent)
	if v := m.Classify(s); v.Rule != wantRule {
		b.Fatalf("rule %q, want %q", v.Rule, wantRule)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Classify(s)
	}
}

// BenchmarkClassifyPrompt: the first rule matches.
func BenchmarkClassifyPrompt(b *testing.B) {
	benchClassify(b, "claude-code", benchScreen(true), "permission")
}

// BenchmarkClassifyIdle: every rule runs, the last matches.
func BenchmarkClassifyIdle(b *testing.B) {
	benchClassify(b, "claude-code", benchScreen(false), "idle")
}

// BenchmarkClassifyNoMatchWholeScreen: the gemini and copilot manifests
// read the whole screen; nothing matches (the worst case).
func BenchmarkClassifyNoMatchWholeScreen(b *testing.B) {
	for agent, rule := range map[string]string{"gemini": "", "copilot": "", "codex": "idle", "qwen-code": "idle", "opencode": ""} {
		b.Run(agent, func(b *testing.B) { benchClassify(b, agent, benchScreen(false), rule) })
	}
}
