package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// A daemon whose socket file is removed (a cleaner of /tmp, where the
// socket is without XDG_RUNTIME_DIR) listens there again and keeps its
// panes, with its lock file gone too; one whose folders are gone
// altogether shuts down and ends its panes, rather than run on where no
// client reaches it and no other daemon can adopt them.
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
	if err := os.RemoveAll(e.dir); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the daemon's end", func() bool { return !proctest.Alive(daemon) })
	waitFor(t, 10*time.Second, "the pane's end", func() bool { return !proctest.Alive(pane) })
}
