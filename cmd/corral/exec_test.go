package main

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

const (
	initJSON   = `{"type":"system","subtype":"init","session_id":"s-1"}`
	resultJSON = `{"type":"result","subtype":"success","is_error":false,"num_turns":2,"duration_ms":5,"total_cost_usd":0.01}`
	askJSON    = `{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"rm -rf build"}}}`
)

// A headless job is a daemon job: it shows in corral ls and the event log,
// ends in done or error, and corral exec exits with its status.
func TestExecJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out := e.must("exec", "--name", "ok", "--agent", "claude", "--json", "--", "sh", "-c",
		"echo '"+initJSON+"'; echo 'not json'; echo '"+resultJSON+"'")
	if !strings.Contains(out, `"session_id":"s-1"`) || !strings.Contains(out, `"type":"diagnostic"`) || !strings.Contains(out, `"type":"outcome"`) {
		t.Fatalf("exec output:\n%s", out)
	}
	if p := e.pane("ok"); p.State != "done" || p.Source != "stream" || p.Agent != "claude" {
		t.Fatalf("job after a good run: %+v", p)
	}
	_, errs, code := e.run("exec", "--name", "torn", "--agent", "claude", "--", "sh", "-c", "echo '"+initJSON+"'; printf '{\"type\":\"ass'; exit 5")
	if code != 5 || !strings.Contains(errs, "exited without a result event (exit status 5)") {
		t.Fatalf("missing result: exit %d %q", code, errs)
	}
	if p := e.pane("torn"); p.State != "error" || !strings.Contains(p.Message, "without a result event") {
		t.Fatalf("job without a result: %+v", p)
	}
	_, errs, code = e.run("exec", "--name", "slow", "--agent", "claude", "--timeout", "300ms", "--", "sh", "-c", "echo '"+initJSON+"'; sleep 30")
	if code != 124 || !strings.Contains(errs, "timed out") {
		t.Fatalf("timeout: exit %d %q", code, errs)
	}
	// pty-lite: stdout is a terminal; escape sequences are stripped.
	out = e.must("exec", "--name", "lite", "--mode", "pty-lite", "--agent", "claude", "--", "sh", "-c",
		`[ -t 1 ] && printf '\033[1m%s\033[0m\n' '`+initJSON+`'; echo '`+resultJSON+`'`)
	if !strings.Contains(out, "session s-1") || !strings.Contains(out, "done: success") {
		t.Fatalf("pty-lite exec:\n%s", out)
	}
	// --stall: a quiet second marks the job stalled, then working again.
	e.must("exec", "--name", "quiet", "--agent", "claude", "--stall", "200ms", "--", "sh", "-c",
		"echo '"+initJSON+"'; sleep 1; echo '"+resultJSON+"'")
	if ls := e.must("ls", "--json"); !strings.Contains(ls, `"session_id": "s-1"`) {
		t.Fatalf("no session id in ls:\n%s", ls)
	}
	events := e.must("events", "--since", "1h")
	if !strings.Contains(events, `"kind":"stalled","message":"stalled: no output for 200ms"`) {
		t.Fatalf("no stalled event:\n%s", events)
	}
	for _, want := range []string{`"pane":"` + e.pane("ok").ID + `"`, `"state":"done"`, `"state":"error"`} {
		if !strings.Contains(events, want) {
			t.Fatalf("event log lacks %s:\n%s", want, events)
		}
	}
}

// A permission request blocks the job until corral answer says yes.
func TestExecPermissionRelay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A fake Claude Code speaking the control protocol on stdin/stdout.
	script := `read prompt; echo '` + initJSON + `'; echo '` + askJSON + `'; read reply; ` +
		`case "$reply" in *'"behavior":"allow"'*) echo '{"type":"assistant","message":{"content":[{"type":"text","text":"allowed"}]}}';; ` +
		`*) echo '{"type":"assistant","message":{"content":[{"type":"text","text":"denied"}]}}';; esac; echo '` + resultJSON + `'; cat >/dev/null`
	cmd := exec.Command(corralBin, "exec", "--name", "relay", "--agent", "claude", "--prompt", "clean up", "--", "sh", "-c", script)
	cmd.Env, cmd.Dir = e.vars, e.dir
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !proctest.WaitFor(10*time.Second, func() bool { return strings.Contains(e.must("ls"), "relay") }) {
		t.Fatalf("no job:\n%s", out.String())
	}
	e.must("wait", "relay", "--state", "blocked", "--timeout", "10s")
	if p := e.pane("relay"); p.Kind != "permission" || p.Message != "approve Bash: rm -rf build" {
		t.Fatalf("blocked job: %+v", p)
	}
	if _, errs, code := e.run("send", "relay", "hello"); code != 3 {
		t.Fatalf("send to a job: exit %d %q", code, errs)
	}
	e.must("answer", "relay", "yes")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "assistant: allowed") || !strings.Contains(out.String(), "allowed Bash: rm -rf build (corral answer yes)") {
			t.Fatalf("exec: %v\n%s", err, out.String())
		}
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("exec did not end:\n%s", out.String())
	}
	if p := e.pane("relay"); p.State != "done" {
		t.Fatalf("job after the answer: %+v", p)
	}
}

// An ACP agent as a job: its permission request blocks the job until
// corral answer, like Claude Code's.
func TestExecACP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A minimal ACP agent in sh: answers initialize and session/new,
	// asks permission during session/prompt, and ends the turn.
	script := `read init; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}'; ` +
		`read new; echo '{"jsonrpc":"2.0","id":2,"result":{"sessionId":"acp-9"}}'; ` +
		`read prompt; echo '{"jsonrpc":"2.0","id":70,"method":"session/request_permission","params":{"sessionId":"acp-9","toolCall":{"title":"Edit main.go","rawInput":{"file_path":"main.go"}},"options":[{"optionId":"y","name":"Allow","kind":"allow_once"},{"optionId":"n","name":"Reject","kind":"reject_once"}]}}'; ` +
		`read answer; case "$answer" in *'"optionId":"y"'*) t=allowed;; *) t=denied;; esac; ` +
		`echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"acp-9","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"'$t'"}}}}'; ` +
		`echo '{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}'; cat >/dev/null`
	cmd := exec.Command(corralBin, "exec", "--name", "acp", "--agent", "acp", "--prompt", "tidy main.go", "--", "sh", "-c", script)
	cmd.Env, cmd.Dir = e.vars, e.dir
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if !proctest.WaitFor(10*time.Second, func() bool { return strings.Contains(e.must("ls"), "acp") }) {
		t.Fatalf("no job:\n%s", out.String())
	}
	e.must("wait", "acp", "--state", "blocked", "--timeout", "10s")
	if p := e.pane("acp"); p.Message != "approve Edit main.go: main.go" {
		t.Fatalf("blocked ACP job: %+v", p)
	}
	e.must("answer", "acp", "no")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "assistant: denied") || !strings.Contains(out.String(), "session acp-9") {
			t.Fatalf("exec: %v\n%s", err, out.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("exec did not end:\n%s", out.String())
	}
}

// Every way a run fails ends corral exec with a non-zero status, and the
// stream carries corral's own job events (a stall) as well as the agent's.
func TestExecExitStatuses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name, script string
		args         []string
		code         int
		stderr       string
	}{
		{"noresult", "echo '" + initJSON + "'", nil, 1, "exited without a result event (exit status 0)"},
		{"iserror", "echo '" + initJSON + "'; echo '{\"type\":\"result\",\"subtype\":\"error_max_turns\",\"is_error\":true}'", nil, 1, "the result is an error"},
		{"status", "echo '" + initJSON + "'; exit 9", nil, 9, "exit status 9"},
		{"signal", "echo '" + initJSON + "'; kill -TERM $$", nil, 128 + int(syscall.SIGTERM), "exit status 143"},
		{"timeout", "echo '" + initJSON + "'; sleep 30", []string{"--timeout", "300ms"}, 124, "timed out"},
		{"good", "echo '" + initJSON + "'; echo '" + resultJSON + "'", nil, 0, ""},
	} {
		args := append([]string{"exec", "--name", tc.name, "--agent", "claude"}, tc.args...)
		_, errs, code := e.run(append(args, "--", "sh", "-c", tc.script)...)
		if code != tc.code || !strings.Contains(errs, tc.stderr) {
			t.Errorf("%s: exit %d (want %d), stderr %q", tc.name, code, tc.code, errs)
		}
	}
	out := e.must("exec", "--name", "stall", "--agent", "claude", "--json", "--stall", "200ms", "--", "sh", "-c",
		"echo '"+initJSON+"'; sleep 1; echo '"+resultJSON+"'")
	if !strings.Contains(out, `{"type":"stall","text":"no output for 200ms","duration_ms":200}`) {
		t.Fatalf("no stall event in the job stream:\n%s", out)
	}
	out = e.must("exec", "--name", "stall2", "--agent", "claude", "--stall", "200ms", "--", "sh", "-c",
		"echo '"+initJSON+"'; sleep 1; echo '"+resultJSON+"'")
	if !strings.Contains(out, "stalled: no output for 200ms") {
		t.Fatalf("no stall line:\n%s", out)
	}
}

// An interrupted corral exec kills its job and exits only once the daemon
// confirms the job ended, with 128+signal; SIGHUP counts too.
func TestExecInterrupted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		name := strings.ToLower(strings.TrimPrefix(sig.String(), "SIG"))
		name = strings.ReplaceAll(name, " ", "")
		cmd := exec.Command(corralBin, "exec", "--name", name, "--agent", "claude", "--", "sh", "-c",
			"echo '"+initJSON+"'; trap '' TERM HUP INT; sleep 60")
		cmd.Env, cmd.Dir = e.vars, e.dir
		var out lockedBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if !proctest.WaitFor(10*time.Second, func() bool { return strings.Contains(out.String(), "session s-1") }) {
			cmd.Process.Kill()
			t.Fatalf("%v: the job never started:\n%s", sig, out.String())
		}
		pid := e.pane(name).PID
		cmd.Process.Signal(sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%v: corral exec did not end:\n%s", sig, out.String())
		}
		if code := cmd.ProcessState.ExitCode(); code != 128+int(sig) {
			t.Errorf("%v: exit %d, want %d:\n%s", sig, code, 128+int(sig), out.String())
		}
		// Confirmed: the job has ended by the time corral exec exits.
		if p := e.pane(name); p.State != "error" || p.ExitCode == nil {
			t.Errorf("%v: job after corral exec exited: %+v", sig, p)
		}
		if proctest.Alive(pid) {
			t.Errorf("%v: the agent %d outlived its job", sig, pid)
		}
	}
}

// A reader of corral exec that falls behind the job loses none of its
// events: the stream reads the job's kept events at the reader's pace.
func TestExecSlowReaderMissesNothing(t *testing.T) {
	t.Parallel()
	if os.Getenv("CORRAL_E2E_RACE") == "1" {
		// 5000 events through a race-built daemon sometimes take longer
		// than the test's bound; the plain pass runs it with -race.
		t.Skip("timing-bound: run in the pass against the plain daemon")
	}
	e := newEnv(t)
	const n = 5000
	script := `echo '` + initJSON + `'; i=0; while [ $i -lt ` + strconv.Itoa(n) + ` ]; do echo '{"type":"assistant","message":{"content":[{"type":"text","text":"line '$i' of a long answer, padded to make it longer"}]}}'; i=$((i+1)); done; echo '` + resultJSON + `'`
	cmd := exec.Command(corralBin, "exec", "--name", "slow", "--agent", "claude", "--json", "--", "sh", "-c", script)
	cmd.Env, cmd.Dir = e.vars, e.dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Read nothing until the job has ended: its events pile up behind a
	// full pipe.
	var out string
	if !proctest.WaitFor(20*time.Second, func() bool {
		out, _, _ = e.run("ls", "--json")
		return strings.Contains(out, `"state": "done"`)
	}) {
		t.Fatalf("the job did not end:\n%s", out)
	}
	all, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exec: %v", err)
	}
	if got := strings.Count(string(all), `"type":"assistant"`); got != n || !strings.Contains(string(all), `"type":"outcome"`) {
		t.Fatalf("%d of %d assistant events reached the reader (outcome: %v)", got, n, strings.Contains(string(all), `"type":"outcome"`))
	}
}

// corral exec | head -1: the reader goes away, and the job goes with it.
func TestExecReaderGoneEndsTheJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cmd := exec.Command(corralBin, "exec", "--name", "piped", "--agent", "claude", "--json", "--", "sh", "-c",
		"echo '"+initJSON+"'; while sleep 0.05; do echo '{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"more\"}]}}'; done")
	cmd.Env, cmd.Dir = e.vars, e.dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	first := make([]byte, 10)
	if _, err := io.ReadFull(stdout, first); err != nil {
		t.Fatal(err)
	}
	stdout.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("corral exec outlived its reader")
	}
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGPIPE) {
		t.Errorf("exit %d, want %d", code, 128+int(syscall.SIGPIPE))
	}
	if p := e.pane("piped"); p.State != "error" || p.ExitCode == nil {
		t.Errorf("job after its reader went: %+v", p)
	}
}
