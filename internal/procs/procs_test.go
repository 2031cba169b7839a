package procs

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

func alive(pid int) bool {
	p, ok := table()[pid]
	return ok && !p.Zombie()
}

// A process that left with setsid, whose parent exited, is found by its
// mark among the subreaper's adopted children, ended, and reaped.
func TestAdoptedOrphanFoundEndedReaped(t *testing.T) {
	if err := Subreaper(); err != nil {
		t.Skip(err)
	}
	mark := "CORRAL_PROCS_TEST=" + time.Now().Format("150405.000000")
	cmd := exec.Command("sh", "-c", "setsid sleep 31.7 & sleep 0.1")
	cmd.Env = append(os.Environ(), mark)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if _, err := Spawn(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	}); err != nil {
		t.Fatal(err)
	}
	root := cmd.Process.Pid
	g := Group{Root: root, Mark: mark}
	WaitExit(root)
	var orphan int
	if !proctest.WaitFor(5*time.Second, func() bool {
		for _, pid := range g.Descendants() {
			if pid != root {
				orphan = pid
			}
		}
		return orphan != 0
	}) {
		t.Fatal("the setsid orphan was not found")
	}
	if pp := table()[orphan].PPID; pp != os.Getpid() {
		t.Fatalf("orphan %d has parent %d, not the subreaper %d", orphan, pp, os.Getpid())
	}
	_ = cmd.Wait()
	Release(root)
	if !g.KillAll(5 * time.Second) {
		t.Fatal("processes survived KillAll")
	}
	if !proctest.WaitFor(5*time.Second, func() bool {
		Reap()
		_, ok := table()[orphan]
		return !ok
	}) {
		t.Fatalf("orphan %d is left (alive %v)", orphan, alive(orphan))
	}
}

// Reap leaves the children os/exec waits for alone.
func TestReapLeavesOwnChildren(t *testing.T) {
	if err := Subreaper(); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if _, err := Spawn(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	}); err != nil {
		t.Fatal(err)
	}
	WaitExit(cmd.Process.Pid)
	Reap()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("Wait after Reap: %v", err)
	}
	Release(cmd.Process.Pid)
}
