package tmuxwatch

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/corral-dev/corral/internal/osproc"
)

// A watched pane's first process is signalled through its group only
// while the process at its pid is the one the watch found: a pid another
// process has since (the same pid, another start time) is left alone.
func TestSignalSparesAnotherProcessAtThePid(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	proc, ok := osproc.Stat(cmd.Process.Pid)
	if !ok || proc.Start == 0 {
		t.Fatalf("no start time for pid %d", cmd.Process.Pid)
	}
	other := &source{pid: cmd.Process.Pid, start: proc.Start + 1}
	if err := other.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(cmd.Process.Pid, 0); err != nil {
		t.Fatalf("a process that started at another time than the pane's was signalled: %v", err)
	}
	own := &source{pid: cmd.Process.Pid, start: proc.Start}
	if err := own.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the pane's own first process was not signalled")
	}
}
