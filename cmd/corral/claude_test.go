package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/lab/mockmodel"
	"github.com/corral-dev/corral/internal/proctest"
)

// TestRealClaudeCode runs the real Claude Code CLI in a pane against a
// scripted model server on loopback (protocols.md §7): corral recognises
// it, adds its hooks for the run, sees its permission dialog, answers it,
// and sees the turn end. Opt-in: it runs when a `claude` binary is found
// ($CORRAL_CLAUDE, or on PATH) and is skipped otherwise.
func TestRealClaudeCode(t *testing.T) {
	t.Parallel()
	e, f := claudeFixture(t)
	claude, home, work, key, model := f.claude, f.home, f.work, f.key, f.model

	e.must("run", "--name", "cc", "--cwd", work, "--size", "120x32",
		"--env", "HOME="+home, "--env", "ANTHROPIC_BASE_URL="+model.URL, "--env", "ANTHROPIC_API_KEY="+key,
		"--env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "--env", "DISABLE_AUTOUPDATER=1", "--env", "DISABLE_TELEMETRY=1",
		"--", claude, "--permission-mode", "default")
	// Idle by default from the first moment: wait for Claude Code's own
	// input box before typing.
	if !proctest.WaitFor(60*time.Second, func() bool { return strings.Contains(e.screen("cc"), "? for shortcuts") }) {
		t.Fatalf("Claude Code never showed its input box:\n%s", e.must("screen", "cc"))
	}
	e.must("send", "cc", "please list the files in /tmp", "--enter")
	if _, errs, code := e.run("wait", "cc", "--state", "blocked", "--timeout", "60s"); code != 0 {
		t.Fatalf("never blocked (%s):\n%s", errs, e.must("screen", "cc"))
	}
	var ps []struct{ Agent, Integration, State, Kind, Message, Source string }
	json.Unmarshal([]byte(e.must("ls", "--json")), &ps)
	if ps[0].Agent != "claude-code" || ps[0].Integration != "claude-code" || ps[0].Kind != "permission" ||
		!strings.Contains(ps[0].Message, "ls -la /tmp") {
		t.Fatalf("blocked pane: %+v\n%s", ps[0], e.must("screen", "cc"))
	}
	e.must("answer", "cc", "yes")
	if _, errs, code := e.run("wait", "cc", "--state", "done", "--timeout", "60s"); code != 0 {
		t.Fatalf("turn never ended (%s):\n%s", errs, e.must("screen", "cc"))
	}
	// Looking turns done into idle, and it stays idle: a standing done
	// report must not raise done again.
	e.must("screen", "cc")
	if _, errs, code := e.run("wait", "cc", "--state", "idle", "--timeout", "5s"); code != 0 {
		t.Fatalf("seen done never became idle (%s)", errs)
	}
	// A window watched on purpose: nothing may change during it.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		json.Unmarshal([]byte(e.must("ls", "--json")), &ps)
		if ps[0].State != "idle" {
			t.Fatalf("a seen done came back: %+v\n%s", ps[0], e.must("events", "--since", "1h"))
		}
	}
	events := e.must("events", "--since", "1h")
	if !strings.Contains(events, `"source":"hook"`) && !strings.Contains(events, `"source":"osc7501"`) {
		t.Fatalf("no report came from the agent itself:\n%s", events)
	}
	t.Logf("events:\n%s", events)
}

// TestRealClaudeCodeHeadless runs `claude -p` as a corral exec job against
// the loopback model server: its permission request comes through the
// control protocol, blocks the job, and corral answer allows it. Opt-in
// like TestRealClaudeCode.
func TestRealClaudeCodeHeadless(t *testing.T) {
	t.Parallel()
	e, f := claudeFixture(t)
	claude, home, work, key, model := f.claude, f.home, f.work, f.key, f.model

	cmd := exec.Command(corralBin, "exec", "--name", "hl", "--env", "HOME="+home, "--env", "ANTHROPIC_BASE_URL="+model.URL,
		"--env", "ANTHROPIC_API_KEY="+key, "--env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "--env", "DISABLE_AUTOUPDATER=1",
		"--", claude, "-p", "please list the files in /tmp", "--output-format", "stream-json", "--verbose", "--permission-mode", "default")
	cmd.Env, cmd.Dir = e.vars, work
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if !proctest.WaitFor(30*time.Second, func() bool { return strings.Contains(e.must("ls"), "hl") }) {
		t.Fatalf("no job:\n%s", out.String())
	}
	if _, errs, code := e.run("wait", "hl", "--state", "blocked", "--timeout", "60s"); code != 0 {
		t.Fatalf("never blocked (%s):\n%s", errs, out.String())
	}
	e.must("answer", "hl", "yes")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "allowed Bash: ls -la /tmp") || !strings.Contains(out.String(), "done: success") {
			t.Fatalf("exec: %v\n%s", err, out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("exec did not end:\n%s", out.String())
	}
}

// realCLI finds an agent CLI for an opt-in test: $envVar, or name on PATH;
// the test is skipped without one.
func realCLI(t *testing.T, envVar, name, pkg string) string {
	t.Helper()
	if p := os.Getenv(envVar); p != "" {
		return p
	}
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("no %s CLI (npm install %s, or set %s)", name, pkg, envVar)
	}
	return p
}

type claudeSetup struct {
	claude, home, work, key string
	model                   *mockmodel.Server
}

// claudeFixture finds the claude CLI and prepares what it needs to run
// against a loopback model server (protocols.md §7): a fresh HOME with
// onboarding done, the test key approved and the work folder trusted.
func claudeFixture(t *testing.T) (*env, claudeSetup) {
	t.Helper()
	f := claudeSetup{claude: realCLI(t, "CORRAL_CLAUDE", "claude", "@anthropic-ai/claude-code")}
	if filepath.Base(f.claude) != "claude" {
		t.Fatalf("CORRAL_CLAUDE must name a binary called claude, not %s", f.claude)
	}
	model, err := mockmodel.Start("ls -la /tmp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	f.model = model
	e := newEnv(t)
	f.home, f.work = filepath.Join(e.dir, "home"), filepath.Join(e.dir, "work")
	os.MkdirAll(f.home, 0o700)
	os.MkdirAll(f.work, 0o700)
	f.key = "sk-ant-test-0123456789abcdefghijklmnopqrstuvwxyz"
	cfg, _ := json.Marshal(map[string]any{
		"hasCompletedOnboarding": true, "theme": "dark",
		"customApiKeyResponses": map[string]any{"approved": []string{f.key[len(f.key)-20:]}, "rejected": []string{}},
		"projects":              map[string]any{f.work: map[string]any{"hasTrustDialogAccepted": true}},
	})
	os.WriteFile(filepath.Join(f.home, ".claude.json"), cfg, 0o600)
	return e, f
}

// TestRealClaudeCodeBackground: a turn that leaves a background shell
// running. Claude Code (2.1.332) itself reports working, "1 shell still
// running", until the shell ends, then tells its model in a turn of its
// own: the pane says what it says, and is done once that turn ends.
// Opt-in like TestRealClaudeCode.
func TestRealClaudeCodeBackground(t *testing.T) {
	t.Parallel()
	e, f := claudeFixture(t)
	e.must("run", "--name", "cc", "--cwd", f.work, "--size", "120x32",
		"--env", "HOME="+f.home, "--env", "ANTHROPIC_BASE_URL="+f.model.URL, "--env", "ANTHROPIC_API_KEY="+f.key,
		"--env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "--env", "DISABLE_AUTOUPDATER=1", "--env", "DISABLE_TELEMETRY=1",
		"--", f.claude, "--permission-mode", "default")
	e.must("wait", "cc", "--state", "idle", "--timeout", "60s")
	e.must("send", "cc", "corral:background 15", "--enter")
	type row struct{ State, Message, Source string }
	pane := func() row {
		var ps []row
		json.Unmarshal([]byte(e.must("ls", "--json")), &ps)
		return ps[0]
	}
	waitFor(t, 60*time.Second, "the turn's answer", func() bool { return strings.Contains(e.screen("cc"), "Done. The tool ran.") })
	waitFor(t, 5*time.Second, "the background shell reported", func() bool {
		p := pane()
		return p.State == "working" && strings.Contains(p.Message, "still running")
	})
	t.Logf("while the shell runs: %+v", pane())
	if _, errs, code := e.run("wait", "cc", "--state", "done", "--timeout", "60s"); code != 0 {
		t.Fatalf("never done after the shell (%s):\n%s", errs, e.must("screen", "cc"))
	}
	if p := pane(); strings.Contains(p.Message, "still running") || !strings.Contains(e.must("screen", "cc"), "completed") {
		t.Fatalf("done, but the shell is said to run: %+v\n%s", p, e.must("screen", "cc"))
	}
	t.Logf("events:\n%s", e.must("events", "--since", "1h"))
}
