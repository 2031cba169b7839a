package replay

import (
	"os"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
)

// A real Claude Code 2.1.332 started as a user starts it (auto mode, its
// default) in a corral pane, against a loopback model server through
// which auto mode's check cannot reach Anthropic (a `corral verify` run
// without --permission-mode): its screen rules alone read the fresh box
// idle, the notice it opens at the first tool call a question, and the
// unnumbered approval after it a permission prompt.
func TestClaudeCodeAutoModeSession(t *testing.T) {
	data, err := os.ReadFile("../../testdata/live/claude-code-auto/session.cast")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Parse(data, 120, 32)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		at         time.Duration
		state      combine.State
		kind, rule string
	}{
		{2 * time.Second, combine.Idle, "", "idle"},
		{5 * time.Second, combine.Blocked, "question", "notice"},
		{123 * time.Second, combine.Blocked, "permission", "permission-unnumbered"},
	}
	var samples []time.Duration
	for _, w := range want {
		samples = append(samples, w.at)
	}
	got := map[time.Duration]combine.Decision{}
	res := Run(rec, Options{Rules: ruleSet(t), Agent: "claude-code", ScreenOnly: true, Samples: samples,
		OnSample: func(at time.Duration, e *detect.Engine) { got[at], _ = e.Decision() }})
	defer res.Close()
	for _, w := range want {
		d := got[w.at]
		if d.State != w.state || d.Kind != w.kind || d.Rule != w.rule {
			t.Errorf("at %v: %s/%s (rule %q, %q), want %s/%s (rule %q)", w.at, d.State, d.Kind, d.Rule, d.Message, w.state, w.kind, w.rule)
		}
	}
}
