package rules

import (
	"fmt"
	"testing"
)

// Identifying a screen no manifest names (a shell, a spinner) is done again
// at each new output of its pane: it must leave no garbage, and reading the
// join from a reused buffer must find what a fresh join finds, across
// screens that shrink and grow (a buffer's old tail must not match).
func TestIdentifyScreenReusesItsJoin(t *testing.T) {
	set := embeddedSet(t)
	shell := make([]string, 24)
	for i := range shell {
		shell[i] = fmt.Sprintf("line %d of the scrollback", i)
	}
	long := append([]string(nil), shell...)
	long[0] = "Type your message or @path/to/file" + string(make([]byte, 3000))
	for _, tc := range []struct {
		name  string
		lines []string
		agent string
	}{
		{"a shell", shell, ""},
		{"claude code's banner on the last row", append(append([]string(nil), shell[:23]...), " ✻ Claude Code v2.1.197"), "claude-code"},
		{"a short screen after a long one", []string{"$ "}, ""},
		{"gemini's two parts, rows apart", []string{"Type your message or @path/to/file", "", "~/src  workspace (/directory)"}, "gemini"},
		{"gemini's first part, its second gone", []string{"Type your message or @path/to/file"}, ""},
		{"a wide first row", long, ""},
		{"codex after it", []string{">_ OpenAI Codex (v0.80.0)"}, "codex"},
		{"empty", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if m := set.IdentifyScreen(Screen{Lines: tc.lines}); m != nil {
				got = m.Name
			}
			if got != tc.agent {
				t.Fatalf("identified %q, want %q", got, tc.agent)
			}
		})
	}
	if raceBuild {
		return // the race detector's instrumentation allocates too
	}
	scr := Screen{Lines: shell, Title: "bash"}
	set.IdentifyScreen(scr) // a buffer in the pool
	// A collection that empties the pool in the middle costs one buffer:
	// over 200 runs, the average stays under one.
	if n := testing.AllocsPerRun(200, func() { set.IdentifyScreen(scr) }); n > 0 {
		t.Fatalf("IdentifyScreen allocated %.0f times a call, want none (the rows joined into a reused buffer)", n)
	}
}
