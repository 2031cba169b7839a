package pane

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// A pane in which nothing happens slows its sweep: a program that changes
// its foreground without a word is not read at the sweep's pace, and the
// next thing that happens brings the pace back at once.
func TestQuietPaneSweepsSlowly(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "go")
	script := `echo ready; while [ ! -e "$1" ]; do sleep 0.05; done; set -m; sleep 30; true`
	p, err := Start(Config{ID: "q", Argv: []string{"bash", "-c", script, "bash", gate}, Cols: 80, Rows: 24, Rules: ruleSet(t),
		Sweep: 50 * time.Millisecond, SettleAfter: 300 * time.Millisecond, QuietSweep: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(2 * time.Second)
	awaitScreen(t, p, "ready")
	if !proctest.WaitFor(10*time.Second, p.sweepSlow.Load) {
		t.Fatal("the sweep of a pane quiet for its SettleAfter did not slow")
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The job control of bash gives the terminal to sleep's own group.
	if !proctest.WaitFor(10*time.Second, func() bool { g, err := p.src.Foreground(); return err == nil && g > 0 && g != p.pid }) {
		t.Fatal("the foreground did not change")
	}
	time.Sleep(time.Second) // a window twenty sweeps long at the usual pace
	if in := p.Info(); in.Foreground == "sleep" {
		t.Fatalf("a slowed sweep read the new foreground within a second (sweeping at %v?)", p.cfg.Sweep)
	}
	if !p.sweepSlow.Load() {
		t.Fatal("the sweep woke with nothing happening")
	}
	if err := p.Resize(81, 24); err != nil { // something happens
		t.Fatal(err)
	}
	await(t, p, "the new foreground read once the sweep woke", func(in Info) bool { return in.Foreground == "sleep" })
}

// Output wakes a slowed sweep too.
func TestOutputWakesTheSweep(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "go")
	script := `echo ready; while [ ! -e "$1" ]; do sleep 0.05; done; echo woke; exec sleep 30`
	p, err := Start(Config{ID: "w", Argv: []string{"sh", "-c", script, "sh", gate}, Cols: 80, Rows: 24, Rules: ruleSet(t),
		Sweep: 50 * time.Millisecond, SettleAfter: 300 * time.Millisecond, QuietSweep: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(2 * time.Second)
	awaitScreen(t, p, "ready")
	if !proctest.WaitFor(10*time.Second, p.sweepSlow.Load) {
		t.Fatal("the sweep of a pane quiet for its SettleAfter did not slow")
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	awaitScreen(t, p, "woke")
	if !proctest.WaitFor(10*time.Second, func() bool { return !p.sweepSlow.Load() }) {
		t.Fatal("output did not bring the sweep back to its pace")
	}
}
