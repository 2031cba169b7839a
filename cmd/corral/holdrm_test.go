package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// A --rm pane whose program exits while no daemon runs is removed once
// the next daemon has adopted it.
func TestAdoptRemovesExitedRmPane(t *testing.T) {
	e := newEnv(t)
	flag := filepath.Join(e.dir, "end")
	e.must("run", "--rm", "--name", "gone", "--", "sh", "-c", "while [ ! -e "+flag+" ]; do sleep 0.05; done # 1029")
	e.must("run", "--name", "stays", "--", "sleep", "1029")
	daemon := daemonPID(t, e)
	syscall.Kill(daemon, syscall.SIGKILL)
	waitFor(t, 5*time.Second, "the daemon to die", func() bool { return !proctest.Alive(daemon) })
	os.WriteFile(flag, nil, 0o644)
	waitFor(t, 5*time.Second, "the --rm pane's program to end", func() bool {
		for _, pid := range withArg("1029") {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.Contains(string(b), flag) {
				return false
			}
		}
		return true
	})
	waitFor(t, 10*time.Second, "the --rm pane removed", func() bool {
		ps := e.panes()
		return len(ps) == 1 && ps[0].Name == "stays"
	})
	if n := len(e.holders()); n != 1 {
		t.Errorf("%d holders left, want the one of stays", n)
	}
	e.must("shutdown")
	noneLeft(t, "shutdown", "1029")
}
