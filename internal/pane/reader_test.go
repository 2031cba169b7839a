package pane

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/holder"
	"github.com/corral-dev/corral/internal/proctest"
	"github.com/corral-dev/corral/internal/rawio"
)

// A pane whose program is quiet costs the daemon no goroutine reading its
// terminal: the terminal waits in the process's poller. Its output still
// comes after the wait, in order, and all of it before its end.
func TestQuietPanesReadWithoutGoroutine(t *testing.T) {
	if !pollTerminals {
		t.Skip("the terminal waits in a goroutine of its own here")
	}
	const n = 24
	for _, tc := range []struct {
		name string
		held bool
		// per is what a quiet pane may still cost: a pane of the
		// daemon's own PTY waits for its program's exit.
		per int
	}{
		{"held", true, 0},
		{"own pty", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := rawio.ThePoller(); err != nil { // one a process, not counted
				t.Fatal(err)
			}
			var pool *holder.Pool
			var dir string
			if tc.held {
				pool = &holder.Pool{Exe: os.Args[0], Size: n}
				var err error
				if dir, err = holder.SocketDir(t.TempDir()); err != nil {
					t.Fatal(err)
				}
			}
			// The shared goroutines of earlier tests end first: counted in
			// base, their ends would hide goroutines of these panes.
			if !proctest.WaitFor(15*time.Second, func() bool { return deepWorkers.Load() == 0 }) {
				t.Fatalf("%d shared goroutines still alive", deepWorkers.Load())
			}
			base := runtime.NumGoroutine()
			ps := make([]*Pane, n)
			for i := range ps {
				id := fmt.Sprintf("q%d", i)
				cfg := Config{ID: id, Argv: []string{"sh", "-c", "echo up-" + id + "; read x; echo got-$x; exit 3"},
					Cols: 60, Rows: 8, Rules: ruleSet(t), Sweep: 200 * time.Millisecond}
				if tc.held {
					cfg.Holder = &Holding{Pool: pool, Socket: filepath.Join(dir, id+".sock"), Secret: holder.NewSecret()}
				}
				p, err := Start(cfg)
				if err != nil {
					t.Fatal(err)
				}
				cleanup(t, p)
				ps[i] = p
			}
			for i, p := range ps {
				awaitScreen(t, p, fmt.Sprintf("up-q%d", i))
			}
			// The shared goroutines that fed the first output end once
			// idle (deepIdle); a few of the process's own (the holder
			// process's pipes, the panes' clock) may come and go: far
			// fewer than a goroutine a pane.
			const slack = 6
			var got int
			if !proctest.WaitFor(15*time.Second, func() bool {
				got = runtime.NumGoroutine() - base
				return got <= n*tc.per+slack
			}) {
				buf := make([]byte, 1<<20)
				t.Fatalf("%d quiet panes cost %d goroutines, want at most %d\n%s", n, got, n*tc.per+slack, buf[:runtime.Stack(buf, true)])
			}
			for i, p := range ps {
				if err := p.Input(fmt.Appendf(nil, "w%d\r", i), false); err != nil {
					t.Fatal(err)
				}
			}
			for i, p := range ps {
				select {
				case <-p.Done():
				case <-time.After(15 * time.Second):
					t.Fatalf("pane %d did not end:\n%s", i, p.Snapshot().Text())
				}
				// Its last output was read before its end was told.
				if in, text := p.Info(), p.Snapshot().Text(); in.ExitCode != 3 || !strings.Contains(text, fmt.Sprintf("got-w%d", i)) {
					t.Fatalf("pane %d ended with %d, its screen:\n%s", i, in.ExitCode, text)
				}
			}
		})
	}
}
