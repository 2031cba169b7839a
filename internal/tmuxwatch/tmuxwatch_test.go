package tmuxwatch

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/proctest"
)

// A watched tmux pane end to end at the package's edge: its first screen,
// a prompt that blocks it, keys typed into it, its size refused, its
// foreground read, and Close leaving tmux as it was.
func TestWatchedPane(t *testing.T) {
	ts := newServer(t)
	ts.tmux("new-session", "-d", "-s", "w", "-x", "100", "-y", "25", "sh", "-c",
		`echo hello-before; printf 'Proceed? [y/N] '; read a; echo "typed:$a"; sleep 600`)
	// The first screen is what tmux shows before the watch: new-session
	// returns before its shell has printed (under load, 15 in 300).
	if !proctest.WaitFor(10*time.Second, func() bool {
		return strings.Contains(ts.tmux("capture-pane", "-p", "-t", "w:0.0"), "Proceed?")
	}) {
		t.Fatalf("the shell did not print its prompt:\n%s", ts.tmux("capture-pane", "-p", "-t", "w:0.0"))
	}
	states := make(chan combine.State, 64)
	w := watchAll(t, ts, func(_ *pane.Pane, c detect.Change) { states <- c.Decision.State })
	var p *Pane
	if !proctest.WaitFor(10*time.Second, func() bool {
		if ps := w.Panes(); len(ps) == 1 {
			p = ps[0]
		}
		return p != nil
	}) {
		t.Fatal("the pane was not watched")
	}
	if p.Target() != "w:0.0" || !strings.HasPrefix(p.TmuxID, "%") || p.Socket() != ts.srv.Socket {
		t.Fatalf("pane %s %s %s", p.Target(), p.TmuxID, p.Socket())
	}
	if in := p.Info(); in.Cols != 100 || in.Rows != 25 {
		t.Fatalf("size %dx%d, want the window's 100x25", in.Cols, in.Rows)
	}
	if !strings.Contains(strings.Join(p.Snapshot().Lines, "\n"), "hello-before") {
		t.Fatalf("first screen %q", p.Snapshot().Lines)
	}
	for p.Info().Decision.State != combine.Blocked {
		select {
		case <-states:
		case <-time.After(10 * time.Second):
			t.Fatalf("not blocked: %+v", p.Info().Decision)
		}
	}
	if err := p.Resize(80, 24); !errors.Is(err, pane.ErrFixedSize) {
		t.Fatalf("Resize: %v", err)
	}
	if _, err := p.Answer("yes"); err != nil {
		t.Fatal(err)
	}
	if !proctest.WaitFor(10*time.Second, func() bool { return strings.Contains(ts.tmux("capture-pane", "-p", "-t", "w:0.0"), "typed:y") }) {
		t.Fatalf("the answer did not reach tmux:\n%s", ts.tmux("capture-pane", "-p", "-t", "w:0.0"))
	}
	if fg, err := p.src.Foreground(); err != nil || fg <= 0 {
		t.Fatalf("foreground %d, %v", fg, err)
	}
	if n, err := p.src.Unread(); err != nil || n != 0 {
		t.Fatalf("unread %d, %v", n, err)
	}
	before := ts.tmux("list-windows", "-a", "-F", "#{window_width}x#{window_height}")
	w.Close()
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not let the pane go")
	}
	if p.Info().Exited {
		t.Fatal("a pane let go reads exited")
	}
	if after := ts.tmux("list-windows", "-a", "-F", "#{window_width}x#{window_height}"); after != before {
		t.Fatalf("sizes %s → %s", before, after)
	}
	if err := syscall.Kill(p.src.pid, 0); err != nil {
		t.Fatalf("the pane's program is gone after Close: %v", err)
	}
}
