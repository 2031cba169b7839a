package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// heldScript is a job's program: its init line and a text, then, once the
// file gate exists, another text and (with result) a result; it exits
// with code.
func heldScript(gate string, result bool, code int) string {
	s := "echo '" + initJSON + "'; echo '" + textJSON("before") + "'; " +
		"while [ ! -e " + gate + " ]; do sleep 0.02; done; echo '" + textJSON("after") + "'; "
	if result {
		s += "echo '" + resultJSON + "'; "
	}
	return s + "exit " + strconv.Itoa(code)
}

func textJSON(text string) string {
	return `{"type":"assistant","message":{"content":[{"type":"text","text":"` + text + `"}]}}`
}

// startExec runs corral exec --json on a job running script.
func startExec(t *testing.T, e *env, name, script string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	return startExecWith(t, e, 10*time.Second, script, "--name", name)
}

// startExecWith runs corral exec --json with flags on a Claude Code job
// running script, and waits up to wait for its first text.
func startExecWith(t *testing.T, e *env, wait time.Duration, script string, flags ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	args := append(append([]string{"exec", "--json", "--agent", "claude"}, flags...), "--", "sh", "-c", script)
	cmd := exec.Command(corralBin, args...)
	cmd.Env, cmd.Dir = e.vars, e.dir
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	endJobAtCleanup(t, script)
	waitFor(t, wait, "the job's first text", func() bool { return strings.Contains(out.String(), `"text":"before"`) })
	return cmd, out
}

// streamTypes is the types of a job stream's lines ("assistant:TEXT" for
// texts), and its outcome.
func streamTypes(t *testing.T, ndjson string) ([]string, map[string]any) {
	t.Helper()
	var types []string
	var outcome map[string]any
	sc := bufio.NewScanner(strings.NewReader(ndjson))
	for sc.Scan() {
		var l struct {
			Type    string
			Text    string
			Outcome map[string]any
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue // corral exec's own words, on stderr
		}
		switch {
		case l.Type == "outcome":
			outcome = l.Outcome
		case l.Type == "fleet":
			// the fleet's word on which host runs it
		case l.Type == "assistant":
			types = append(types, "assistant:"+l.Text)
		default:
			types = append(types, l.Type)
		}
	}
	return types, outcome
}

// endJobAtCleanup ends the job running script when the test ends: a test
// that failed with no daemon running leaves no job (nor its holder, which
// ends with it) behind.
func endJobAtCleanup(t *testing.T, script string) {
	t.Cleanup(func() {
		for _, pid := range withArg(script) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// jobHolders returns the live job holders of e.
func (e *env) jobHolders() []int {
	return procsWhere(func(pid int, cmdline []byte) bool {
		args := strings.Split(string(cmdline), "\x00")
		return len(args) >= 3 && args[1] == "jobhold" && strings.HasPrefix(args[2], e.dir) && proctest.Alive(pid)
	})
}

// A job keeps running when its daemon is killed with SIGKILL or restarted;
// corral exec takes its stream again from the next daemon and prints each
// event once, and the job's outcome is complete.
func TestJobOutlivesItsDaemon(t *testing.T) {
	t.Parallel() // its own daemons and folders; its waits are bounds, not measures
	for _, how := range []string{"kill -9", "restart"} {
		t.Run(how, func(t *testing.T) {
			e := newEnv(t)
			gate := filepath.Join(e.dir, "gate")
			script := heldScript(gate, true, 0)
			cmd, out := startExec(t, e, "j", script)
			switch how {
			case "kill -9":
				syscall.Kill(daemonPID(t, e), syscall.SIGKILL)
			case "restart":
				e.must("restart")
			}
			if len(withArg(script)) == 0 {
				t.Fatalf("the job did not outlive its daemon (%s)", how)
			}
			os.WriteFile(gate, nil, 0o600)
			if err := waitExit(t, cmd, 20*time.Second, out); err != nil {
				t.Fatalf("corral exec: %v\n%s", err, out.String())
			}
			types, outcome := streamTypes(t, out.String())
			if got := strings.Join(types, ","); got != "init,assistant:before,assistant:after,result" {
				t.Errorf("corral exec printed %s:\n%s", got, out.String())
			}
			if outcome["state"] != "done" || outcome["session_id"] != "s-1" {
				t.Errorf("outcome %v", outcome)
			}
			p := e.pane("j")
			if p.State != "done" || p.ExitCode == nil || *p.ExitCode != 0 {
				t.Errorf("the job after its daemon went: %+v", p)
			}
			noneLeft(t, "after the job ended", script)
		})
	}
}

// A job that ends while no daemon runs has its outcome (its exit status
// kept by its holder) and all its events when the next daemon starts.
func TestJobEndsWhileNoDaemonRuns(t *testing.T) {
	t.Parallel() // its own daemons and folders; its waits are bounds, not measures
	e := newEnv(t)
	gate := filepath.Join(e.dir, "gate")
	script := heldScript(gate, false, 3)
	cmd, _ := startExec(t, e, "j", script)
	// Nothing starts the next daemon before the job ends: corral exec,
	// which would start one to take its stream again, is stopped before
	// its daemon is killed, and killed after.
	cmd.Process.Signal(syscall.SIGSTOP)
	syscall.Kill(daemonPID(t, e), syscall.SIGKILL)
	cmd.Process.Kill()
	cmd.Wait()
	os.WriteFile(gate, nil, 0o600)
	waitFor(t, 10*time.Second, "the job to end", func() bool { return len(withArg(script)) == 0 && len(e.jobHolders()) == 0 })
	p := e.pane("j") // starts the next daemon
	if p.State != "error" || p.ExitCode == nil || *p.ExitCode != 3 || !strings.Contains(p.Message, "exit status 3") {
		t.Errorf("the job that ended with no daemon: %+v", p)
	}
	types, outcome := streamTypes(t, jobStream(t, e, p.ID, 0))
	if got := strings.Join(types, ","); got != "init,assistant:before,assistant:after" {
		t.Errorf("its events: %s", got)
	}
	if outcome["exit_code"] != float64(3) {
		t.Errorf("its outcome: %v", outcome)
	}
	// A stream taken again from an event on has the rest only.
	if types, _ := streamTypes(t, jobStream(t, e, p.ID, 2)); strings.Join(types, ",") != "assistant:after" {
		t.Errorf("its events from the third on: %v", types)
	}
	// Removed, its folder goes: the next daemon does not show it again.
	e.must("rm", "j")
	if _, err := os.Stat(filepath.Join(e.dir, "state", "jobs", p.ID)); !os.IsNotExist(err) {
		t.Errorf("the removed job's folder: %v", err)
	}
}

// jobStream reads a job's whole stream from event from.
func jobStream(t *testing.T, e *env, id string, from int) string {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", filepath.Join(e.dir, "s.sock"))
	}}, Timeout: 10 * time.Second}
	resp, err := c.Get("http://corral/v1/jobs/" + id + "/stream?from=" + strconv.Itoa(from))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return b.String()
}

// A job the next daemon took again is ended by corral kill, and corral
// shutdown ends held jobs and forgets them: nothing is left running.
func TestHeldJobKillAndShutdown(t *testing.T) {
	t.Parallel() // its own daemons and folders; its waits are bounds, not measures
	e := newEnv(t)
	gate := filepath.Join(e.dir, "gate")
	killed, stopped := heldScript(gate, true, 0), heldScript(gate+"2", true, 0)
	startExec(t, e, "killed", killed)
	startExec(t, e, "stopped", stopped)
	syscall.Kill(daemonPID(t, e), syscall.SIGKILL)
	e.must("kill", "killed") // the next daemon, which took both again
	waitFor(t, 10*time.Second, "the killed job to end", func() bool { return len(withArg(killed)) == 0 })
	if p := e.pane("killed"); p.State != "error" || !strings.Contains(p.Message, "cancelled") {
		t.Errorf("the killed job: %+v", p)
	}
	if p := e.pane("stopped"); p.State != "working" {
		t.Errorf("the other job: %+v", p)
	}
	e.must("shutdown")
	noneLeft(t, "after corral shutdown", stopped)
	if h := e.jobHolders(); len(h) > 0 {
		t.Errorf("job holders left after corral shutdown: %v", h)
	}
	if ents, _ := os.ReadDir(filepath.Join(e.dir, "state", "jobs")); len(ents) > 0 {
		t.Errorf("job folders left after corral shutdown: %v", ents)
	}
}

// A fleet job whose host's daemon is killed mid-job, or restarted, runs
// once: the job goes on under its holder, and the host's next daemon
// reports it again (at once, or tied to the caller's --retry queued when
// the host went silent); the caller gets each event once.
func TestFleetJobRunsOnceAcrossHostRestart(t *testing.T) {
	proctest.Slow(t, "three fleets, a host restarted in each, about 7 s")
	t.Parallel() // its own daemons and folders; its waits are bounds, not measures
	// Each case has a fleet of its own: all at once.
	run, wait := atOnce(t)
	defer wait()
	for _, when := range []string{"at once", "after the retry was queued", "corral restart"} {
		run(when, func(t *testing.T) {
			hub, b := fleetPair(t)
			gate, runs := filepath.Join(b.dir, "gate"), filepath.Join(b.dir, "runs")
			script := "echo run >> " + runs + "; " + heldScript(gate, true, 0)
			cmd, out := startExecWith(t, hub, 15*time.Second, script, "--fleet", "--host", "b", "--retry", "2")
			switch when {
			case "corral restart":
				b.must("restart")
			case "after the retry was queued":
				syscall.Kill(b.daemonPID(), syscall.SIGKILL)
				waitFor(t, 15*time.Second, "the caller to queue the job again", func() bool { return strings.Contains(out.String(), "queued again") })
			default:
				syscall.Kill(b.daemonPID(), syscall.SIGKILL)
			}
			b.must("fleet", "status") // b's next daemon, and its fleet
			os.WriteFile(gate, nil, 0o600)
			if err := waitExit(t, cmd, 30*time.Second, out); err != nil {
				t.Fatalf("corral exec --fleet: %v\n%s", err, out.String())
			}
			types, outcome := streamTypes(t, out.String())
			if got := strings.Join(types, ","); got != "init,assistant:before,assistant:after,result" {
				t.Errorf("the caller printed %s:\n%s", got, out.String())
			}
			if outcome["state"] != "done" {
				t.Errorf("outcome %v", outcome)
			}
			if b, _ := os.ReadFile(runs); string(b) != "run\n" {
				t.Errorf("the job ran %d times", strings.Count(string(b), "run"))
			}
		})
	}
}

// A held job blocked on a permission request when its daemon is killed is
// blocked on it under the next daemon, and corral answer there reaches
// the agent's stdin, kept by its holder.
func TestHeldJobAnsweredAfterDaemonKill(t *testing.T) {
	t.Parallel() // its own daemons and folders; its waits are bounds, not measures
	e := newEnv(t)
	// The folder in the script makes it this test's own: endJobAtCleanup
	// kills every process with the script in its arguments, and other tests
	// run the same relay script in parallel.
	script := `: ` + e.dir + `; read prompt; echo '` + initJSON + `'; echo '` + askJSON + `'; read reply; ` +
		`case "$reply" in *'"behavior":"allow"'*) echo '{"type":"assistant","message":{"content":[{"type":"text","text":"allowed"}]}}';; ` +
		`*) echo '{"type":"assistant","message":{"content":[{"type":"text","text":"denied"}]}}';; esac; echo '` + resultJSON + `'; cat >/dev/null`
	cmd := exec.Command(corralBin, "exec", "--name", "relay", "--agent", "claude", "--prompt", "clean up", "--", "sh", "-c", script)
	cmd.Env, cmd.Dir = e.vars, e.dir
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	endJobAtCleanup(t, script)
	waitFor(t, 10*time.Second, "the job", func() bool { return strings.Contains(e.must("ls"), "relay") })
	e.must("wait", "relay", "--state", "blocked", "--timeout", "10s")
	syscall.Kill(daemonPID(t, e), syscall.SIGKILL)
	e.must("wait", "relay", "--state", "blocked", "--timeout", "10s") // the next daemon
	if p := e.pane("relay"); p.Kind != "permission" || p.Message != "approve Bash: rm -rf build" {
		t.Fatalf("the job under the next daemon: %+v", p)
	}
	e.must("answer", "relay", "yes")
	if err := waitExit(t, cmd, 20*time.Second, &out); err != nil || strings.Count(out.String(), "assistant: allowed") != 1 || !strings.Contains(out.String(), "allowed Bash: rm -rf build (corral answer yes)") {
		t.Fatalf("exec: %v\n%s", err, out.String())
	}
	if p := e.pane("relay"); p.State != "done" {
		t.Fatalf("the job after the answer: %+v", p)
	}
}

// waitExit waits for a started command to end and returns its error; the
// test fails, showing out, when it has not ended within d.
func waitExit(t *testing.T, cmd *exec.Cmd, d time.Duration, out fmt.Stringer) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("%s did not end within %v:\n%s", strings.Join(cmd.Args, " "), d, out.String())
		return nil
	}
}
