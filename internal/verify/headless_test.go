package verify_test

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/corral-dev/corral/internal/cli"
	"github.com/corral-dev/corral/internal/proctest"
	"github.com/corral-dev/corral/internal/verify"
)

// asCorral makes the test binary corral itself in the processes the
// headless engine starts (the private daemon, corral exec, corral answer).
const asCorral = "VERIFY_TEST_RUN_AS_CORRAL"

func TestMain(m *testing.M) {
	if os.Getenv(asCorral) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := cli.Run(ctx, os.Args[1:], cli.StdIO())
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// fakeClaude speaks Claude Code's stream-json by its prompt: "hello" ends
// a turn, "slow" starts a tool call and sleeps, "ask" asks permission
// for a command, "fail" reports an error.
const fakeClaude = `#!/bin/sh
if [ "$1" = "--version" ]; then echo "9.9.9 (Claude Code)"; exit 0; fi
echo '{"type":"system","subtype":"init","session_id":"s1","tools":[],"model":"fake"}'
# corral relays the prompt as a stream-json user message on stdin.
read -r line
case "$line" in
*hello*)
	echo '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Hello."}]}}'
	echo '{"type":"result","subtype":"success","is_error":false,"duration_ms":10,"num_turns":1,"session_id":"s1","result":"Hello."}' ;;
*slow*)
	echo '{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"sleep 30"}}]}}'
	exec sleep 30 ;;
*ask*)
	echo '{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"touch x"}}}'
	read -r answer
	echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"session_id":"s1","result":"asked"}' ;;
*fail*)
	echo '{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":1,"session_id":"s1","result":"it broke"}'
	exit 1 ;;
esac
`

// TestRunHeadless runs the headless case engine against a fake agent: the
// cases come out right or wrong by exit status and output.
func TestRunHeadless(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a daemon; runs without -short")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(asCorral, "1")
	dir := t.TempDir()
	bin := filepath.Join(dir, "claude")
	if err := proctest.WriteExecutable(bin, []byte(fakeClaude), 0o755); err != nil {
		t.Fatal(err)
	}
	agent := &verify.HeadlessAgent{Profile: "claude-code", Cases: []verify.HeadlessCase{
		{Name: "plain", Args: []string{"-p", "hello"}, Want: []string{"done: success", "assistant: Hello."}},
		{Name: "timeout", Flags: []string{"--timeout", "1s"}, Args: []string{"-p", "slow"}, Code: 124, Want: []string{"timed out after 1s", "tool Bash: sleep 30"}},
		{Name: "interrupt", Interrupt: true, Args: []string{"-p", "slow"}, Code: 130, Want: []string{"was killed"}},
		{Name: "answered", Answer: "no", Args: []string{"-p", "ask"}, Want: []string{"denied Bash: touch x (corral answer no)", "done: success"}},
		{Name: "policy", Flags: []string{"--policy", "POLICY"}, Args: []string{"-p", "ask"}, Want: []string{"allowed Bash: touch x (policy.toml", "done: success"}},
		{Name: "failed", Args: []string{"-p", "fail"}, Code: -1, Want: []string{"it broke"}},
		// Wrong on purpose: the run fails, the case wants success.
		{Name: "wrong", Args: []string{"-p", "fail"}, Want: []string{"done: success"}, Not: []string{"it broke"}},
	}}
	var log strings.Builder
	res, err := verify.RunHeadless(context.Background(), verify.HeadlessOptions{Agent: agent, Command: bin, Exe: exe, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != "9.9.9" || res.Agent != "claude-code" || len(res.Cases) != 7 {
		t.Fatalf("result: %+v", res)
	}
	for _, c := range res.Cases {
		if c.Right != (c.Name != "wrong") {
			t.Errorf("%s: right %v, exit %d, missing %q, unwanted %q:\n%s", c.Name, c.Right, c.Exit, c.Missing, c.Unwant, c.Output)
		}
	}
	if w := res.Cases[6]; len(w.Missing) != 1 || len(w.Unwant) != 1 || w.Exit == 0 {
		t.Errorf("wrong case: %+v", w)
	}
	if res.OK() {
		t.Error("a wrong case left the run OK")
	}
	var out strings.Builder
	verify.PrintHeadless(&out, res)
	if !strings.Contains(out.String(), "right: 6/7") || !strings.Contains(out.String(), "wrong  ✗") {
		t.Errorf("table:\n%s", out.String())
	}
	only, err := verify.RunHeadless(context.Background(), verify.HeadlessOptions{Agent: agent, Command: bin, Exe: exe, Only: []string{"plain"}})
	if err != nil || len(only.Cases) != 1 || !only.OK() {
		t.Fatalf("only plain: %+v, %v", only, err)
	}
}

// TestHeadlessAgents checks the case table: every agent has a pane
// profile, and every case a known server and an expectation.
func TestHeadlessAgents(t *testing.T) {
	for _, a := range verify.HeadlessAgents {
		if _, err := verify.HeadlessAgentFor(a.Profile); err != nil {
			t.Errorf("%s: %v", a.Profile, err)
		}
		seen := map[string]bool{}
		for _, c := range a.Cases {
			if seen[c.Name] || c.Expect == "" || len(c.Want) == 0 || c.Server == "" {
				t.Errorf("%s %s: duplicate, or no expectation, key event or server", a.Profile, c.Name)
			}
			seen[c.Name] = true
		}
		for _, must := range []string{"plain", "timeout", "interrupt", "lost"} {
			if !seen[must] {
				t.Errorf("%s has no %s case", a.Profile, must)
			}
		}
	}
	if _, err := verify.HeadlessAgentFor("opencode"); err == nil {
		t.Error("opencode has no headless mode verify knows")
	}
}
