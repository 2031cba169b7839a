package main

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// A headless job that cannot be held (pty-lite mode: its stream is read
// from a terminal, not a file; see jobsurvive_test.go for the held ones)
// ends with the daemon that runs it, however the daemon ends: a daemon
// killed with SIGKILL leaves no job behind, not even a process that
// ignores SIGTERM and SIGHUP in a session of its own (under a fleet
// --retry it would otherwise run twice).
func TestJobEndsWithItsDaemon(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := "echo '" + initJSON + "'; setsid sh -c \"trap '' TERM HUP; exec sleep 1031\" & " +
		"trap '' TERM HUP INT; sleep 1032"
	cmd := exec.Command(corralBin, "exec", "--mode", "pty-lite", "--name", "j", "--agent", "claude", "--", "sh", "-c", script)
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

// After the daemon and a pane's holder are both killed, what the pane's
// program left (a shell that ignores SIGHUP, a setsid grandchild) is found
// and ended by the next daemon, and the pane is kept as lost.
func TestNextDaemonEndsWhatAPaneLeft(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("run", "--name", "stubborn", "--", "sh", "-c",
		"trap '' HUP TERM; setsid sh -c \"trap '' HUP TERM; exec sleep 1051\" & echo started; sleep 1052")
	waitFor(t, 10*time.Second, "the pane's processes", func() bool {
		return len(withArg("1051")) > 0 && len(withArg("1052")) > 0
	})
	syscall.Kill(daemonPID(t, e), syscall.SIGKILL)
	for _, h := range e.holders() {
		syscall.Kill(h, syscall.SIGKILL)
	}
	// Not ended by the terminal's hang-up: they ignore it.
	waitFor(t, 5*time.Second, "the holders gone", func() bool { return len(e.holders()) == 0 })
	if len(withArg("1051")) == 0 || len(withArg("1052")) == 0 {
		t.Fatalf("the pane's processes did not outlive their holder: %v %v", withArg("1051"), withArg("1052"))
	}
	p := e.pane("stubborn") // starts the next daemon
	if p.State != "lost" || !strings.Contains(p.Message, "corral restore") {
		t.Errorf("the pane after its holder was killed: %+v", p)
	}
	if left := append(withArg("1051"), withArg("1052")...); len(left) > 0 {
		t.Fatalf("the next daemon left the pane's processes running: %v", left)
	}
}

// A pane whose holder was killed while the daemon ran leaves nothing
// running after corral shutdown.
func TestShutdownEndsWhatAPaneLeft(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("run", "--name", "stubborn", "--", "sh", "-c",
		"trap '' HUP TERM; setsid sh -c \"trap '' HUP TERM; exec sleep 1053\" & echo started; sleep 1054")
	waitFor(t, 10*time.Second, "the pane's processes", func() bool {
		return len(withArg("1053")) > 0 && len(withArg("1054")) > 0
	})
	for _, h := range e.holders() {
		syscall.Kill(h, syscall.SIGKILL)
	}
	waitFor(t, 10*time.Second, "the pane to end with its holder", func() bool { return e.pane("stubborn").State != "working" && e.pane("stubborn").State != "idle" })
	e.must("shutdown")
	if left := append(withArg("1053"), withArg("1054")...); len(left) > 0 {
		t.Fatalf("corral shutdown left the pane's processes running: %v", left)
	}
}
