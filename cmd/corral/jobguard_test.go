package main

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// A headless job ends with the daemon that runs it, however the daemon
// ends: a daemon killed with SIGKILL leaves no job behind, not even a
// process that ignores SIGTERM and SIGHUP in a session of its own (under a
// fleet --retry it would otherwise run twice).
func TestJobEndsWithItsDaemon(t *testing.T) {
	e := newEnv(t)
	script := "echo '" + initJSON + "'; setsid sh -c \"trap '' TERM HUP; exec sleep 1031\" & " +
		"trap '' TERM HUP INT; sleep 1032"
	cmd := exec.Command(corralBin, "exec", "--name", "j", "--agent", "claude", "--", "sh", "-c", script)
	cmd.Env, cmd.Dir = e.vars, e.dir
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, 10*time.Second, "the job and its grandchild", func() bool {
		return strings.Contains(out.String(), "session s-1") && len(withArg("1031")) > 0 && len(withArg("1032")) > 0
	})
	syscall.Kill(daemonPID(t, e), syscall.SIGKILL)
	killed := time.Now()
	if !proctest.WaitFor(10*time.Second, func() bool { return len(withArg("1031"))+len(withArg("1032")) == 0 }) {
		t.Fatalf("the job outlived its daemon by 10 s: %v %v", withArg("1031"), withArg("1032"))
	}
	t.Logf("the job ended %v after its daemon", time.Since(killed).Round(time.Millisecond))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatalf("corral exec did not end after its daemon did:\n%s", out.String())
	}
	if cmd.ProcessState.ExitCode() == 0 {
		t.Errorf("corral exec exited 0 though its daemon was killed mid-job:\n%s", out.String())
	}
}
