package main

import (
	"encoding/json"
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
	t.Parallel()
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

// A daemon that dies between starting a pane's holder and writing the
// pane table leaves a holder nobody can adopt (its secret was never
// saved): the next daemon ends it and its program, and says so; the
// panes the table names are adopted as ever.
func TestStrayHolderEnded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("run", "--name", "kept", "--", "sleep", "1065")
	e.must("run", "--name", "stray", "--", "sleep", "1033")
	stray := e.pane("stray")
	state := filepath.Join(e.dir, "state")
	daemon := daemonPID(t, e)
	syscall.Kill(daemon, syscall.SIGKILL)
	waitFor(t, 5*time.Second, "the daemon to die", func() bool { return !proctest.Alive(daemon) })
	// The table as it was before the stray pane was noted.
	table := foldTable(t, state)
	var rows []any
	for _, r := range table["panes"].([]any) {
		if r.(map[string]any)["name"] != "stray" {
			rows = append(rows, r)
		}
	}
	table["panes"] = rows
	b, _ := json.Marshal(table)
	os.WriteFile(filepath.Join(state, "panes.json"), b, 0o600)

	if ps := e.panes(); len(ps) != 1 || ps[0].Name != "kept" {
		t.Fatalf("adopted: %+v", ps)
	}
	noneLeft(t, "the stray holder's end", "1033")
	waitFor(t, 5*time.Second, "one holder left", func() bool { return len(e.holders()) == 1 })
	log, _ := os.ReadFile(filepath.Join(state, "daemon.log"))
	if want := "no daemon can adopt it"; !strings.Contains(string(log), want) {
		t.Errorf("the daemon's log does not say %q:\n%s", want, log)
	}
	// The holder removes the socket once it has reaped the program, which
	// noneLeft saw gone a moment before (a zombie is no longer alive);
	// the holder process itself may serve the other pane.
	waitFor(t, 5*time.Second, "the stray holder's socket removed", func() bool {
		_, err := os.Stat(filepath.Join(state, "holders", stray.ID+".sock"))
		return err != nil
	})
	e.must("shutdown")
	noneLeft(t, "shutdown", "1065")
}
