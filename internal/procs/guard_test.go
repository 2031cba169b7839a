package procs

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// The test binary doubles as the guard.
func TestMain(m *testing.M) {
	if os.Getenv("CORRAL_TEST_GUARD") == "1" {
		os.Exit(GuardMain(os.Args[1:], os.Stderr))
	}
	os.Exit(m.Run())
}

// guarded starts script under a guard and returns the guard and the
// lifeline's write end.
func guarded(t *testing.T, script string) (*exec.Cmd, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(os.Args[0], "/bin/sh", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "CORRAL_TEST_GUARD=1", "CORRAL_JOB=guardtest")
	cmd.ExtraFiles = []*os.File{r}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	// Only if it is still this test's group: the test may have waited for
	// the process long ago, and its pid may name another process by now.
	proctest.KillGroupAtCleanup(t, cmd.Process.Pid)
	return cmd, w
}

func waitStatus(t *testing.T, cmd *exec.Cmd, within time.Duration) syscall.WaitStatus {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.Sys().(syscall.WaitStatus)
	case <-time.After(within):
		t.Fatalf("the guard did not end within %v", within)
		return 0
	}
}

// While its daemon lives, a guard exits as its run exited.
func TestGuardExitsAsTheRun(t *testing.T) {
	cmd, _ := guarded(t, "exit 7")
	if ws := waitStatus(t, cmd, 10*time.Second); !ws.Exited() || ws.ExitStatus() != 7 {
		t.Errorf("run exited 7, guard: %v", ws)
	}
	cmd, _ = guarded(t, "kill -TERM $$; sleep 5")
	if ws := waitStatus(t, cmd, 10*time.Second); !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("run killed by SIGTERM, guard: %v", ws)
	}
}

// When the lifeline closes (the daemon is gone), the guard ends the run and
// what it started, SIGTERM ignored or not, in its group or not.
func TestGuardEndsTheRunWithTheDaemon(t *testing.T) {
	dir := t.TempDir()
	cmd, w := guarded(t, "setsid sh -c \"trap '' TERM HUP; echo \\$\\$ > "+dir+"/gc; exec sleep 300\" & "+
		"trap '' TERM HUP INT; echo $$ > "+dir+"/run; sleep 300")
	var pids []int
	started := proctest.WaitFor(10*time.Second, func() bool {
		pids = pids[:0]
		for _, f := range []string{"gc", "run"} {
			if b, err := os.ReadFile(dir + "/" + f); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					pids = append(pids, pid)
				}
			}
		}
		return len(pids) == 2
	})
	if !started {
		t.Fatal("the run never started")
	}
	w.Close()
	waitStatus(t, cmd, GuardGrace+10*time.Second)
	for _, pid := range pids {
		gone := proctest.WaitFor(5*time.Second, func() bool {
			_, zombie, ok := Parent(pid)
			return !ok || zombie
		})
		if !gone {
			t.Fatalf("process %d outlived the guard's daemon", pid)
		}
	}
}
