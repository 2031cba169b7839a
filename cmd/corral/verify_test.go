package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/proctest"
	"github.com/corral-dev/corral/internal/verify"
)

type verifyJSON struct {
	Agent  string
	Steps  []struct{ Step, Truth_source string }
	Scores map[string]int
}

// corral verify runs the built-in fake agent as the command after --, in
// a private daemon of its own, through every step the fake agent can
// take, and is right at all of them; --record saves a recording that
// loads and judges the same way.
func verifyFakeAgent(t *testing.T) {
	t.Parallel()
	proctest.Slow(t, "about 20 s")
	e := newEnv(t)
	rec := filepath.Join(e.dir, "rec")
	out, errs, code := e.run("verify", "--json", "--record", rec, "--", corralBin, "fake-agent", "--osc7501")
	if code != 0 {
		t.Fatalf("verify: exit %d\n%s\n%s", code, out, errs)
	}
	var res verifyJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.Agent != "fake-agent" || len(res.Steps) != 10 || res.Scores["live"] != 10 || res.Scores["screen"] != 10 || res.Scores["osc7501"] != 10 {
		t.Fatalf("verify: %+v\n%s", res, out)
	}
	for _, s := range res.Steps {
		// Its first report may come before verify attaches to the pane.
		if s.Truth_source != "osc7501" && s.Step != "startup" {
			t.Errorf("%s: truth from %s; the fake agent reports", s.Step, s.Truth_source)
		}
	}
	// It used a daemon of its own: this installation's never started.
	if _, err := os.Stat(filepath.Join(e.dir, "s.sock")); err == nil {
		t.Fatal("verify started the user's daemon")
	}
	r, err := verify.Load(rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Cast.Markers()) != 10 || len(r.Live) == 0 {
		t.Fatalf("recording: %d markers, %d live states", len(r.Cast.Markers()), len(r.Live))
	}
	// A bad command line is exit 2 with the agents it knows.
	if _, errs, code := e.run("verify", "--agent", "nope"); code != 2 || !strings.Contains(errs, "claude-code") {
		t.Fatalf("unknown agent: exit %d %q", code, errs)
	}
}

// TestVerifyRealAgents runs corral verify against each real agent CLI
// found ($CORRAL_CLAUDE, $CORRAL_GEMINI, or on PATH), skipped when absent.
// Opt-in twice over: it also needs CORRAL_VERIFY=1 (a run takes minutes).
// It fails when a step corral got right in the checked-in recording
// (testdata/live/verify/AGENT) is wrong now.
func TestVerifyRealAgents(t *testing.T) {
	t.Parallel()
	if os.Getenv("CORRAL_VERIFY") != "1" {
		t.Skip("set CORRAL_VERIFY=1 to verify the real agent CLIs")
	}
	for _, a := range []struct{ agent, envVar, bin, pkg string }{
		{"claude-code", "CORRAL_CLAUDE", "claude", "@anthropic-ai/claude-code"},
		{"gemini", "CORRAL_GEMINI", "gemini", "@google/gemini-cli"},
		{"codex", "CORRAL_CODEX", "codex", "@openai/codex"},
		{"qwen-code", "CORRAL_QWEN", "qwen", "@qwen-code/qwen-code"},
		{"opencode", "CORRAL_OPENCODE", "opencode", "opencode-ai"},
		{"copilot", "CORRAL_COPILOT", "copilot", "@github/copilot"},
	} {
		t.Run(a.agent, func(t *testing.T) {
			bin := realCLI(t, a.envVar, a.bin, a.pkg)
			e := newEnv(t)
			out, errs, _ := e.run("verify", "--json", "--agent", a.agent, "--", bin)
			var res struct {
				Steps []struct {
					Step  string
					Right bool
				}
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("%v\n%s\n%s", err, out, errs)
			}
			was, err := verify.Load(filepath.Join("..", "..", "testdata", "live", "verify", a.agent))
			if err != nil {
				t.Skipf("no recording to compare with: %v", err)
			}
			right := map[string]bool{}
			for _, s := range was.Steps {
				right[s.Name] = s.Right
			}
			for _, s := range res.Steps {
				if right[s.Step] && !s.Right {
					t.Errorf("%s: wrong now, right in the recording", s.Step)
				}
			}
			t.Logf("%s", out)
		})
	}
}
