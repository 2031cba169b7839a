package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// A daemon whose socket file is removed (a cleaner of /tmp, where the
// socket is without XDG_RUNTIME_DIR) listens there again and keeps its
// panes, with its lock file gone too; one whose folders are gone
// altogether shuts down and ends its panes, rather than run on where no
// client reaches it and no other daemon can adopt them. A hand-over after
// the socket was made again passes the new one on.
func TestDaemonKeepsItsSocket(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("run", "--name", "s", "--", "sleep", "600")
	daemon, pane := daemonPID(t, e), e.pane("s").PID
	sock := filepath.Join(e.dir, "s.sock")
	for _, gone := range [][]string{{sock}, {sock, sock + ".lock"}} {
		for _, f := range gone {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		// Looked for, not asked for: a command would start another daemon.
		waitFor(t, 10*time.Second, "the socket again", func() bool {
			_, err := os.Stat(sock)
			return err == nil
		})
		if pid := daemonPIDAny(e); pid != daemon {
			t.Fatalf("after %d files removed, daemon %d answers, want %d", len(gone), pid, daemon)
		}
		if p := e.pane("s"); p.PID != pane || p.State == "exited" {
			t.Fatalf("after %d files removed, the pane is %+v", len(gone), p)
		}
	}
	// A hand-over from the daemon that listens again passes on the socket
	// it listens on now; the one before does not take the file with it.
	next := exec.Command(corralBin, "serve", "--replace")
	next.Env, next.Dir = e.vars, e.dir
	if err := next.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { next.Process.Kill(); next.Wait() })
	waitFor(t, 10*time.Second, "the old daemon's end", func() bool { return !proctest.Alive(daemon) })
	daemon = next.Process.Pid
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("after the hand-over: %v", err)
	}
	if pid := daemonPIDAny(e); pid != daemon {
		t.Fatalf("after the hand-over, daemon %d answers, want %d", pid, daemon)
	}
	if p := e.pane("s"); p.PID != pane || p.State == "exited" {
		t.Fatalf("after the hand-over, the pane is %+v", p)
	}
	if err := os.RemoveAll(e.dir); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the daemon's end", func() bool { return !proctest.Alive(daemon) })
	waitFor(t, 10*time.Second, "the pane's end", func() bool { return !proctest.Alive(pane) })
}
