package procs

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/osproc"
)

// startMarked starts a sleep whose environment holds env and none of the
// test's own CORRAL_ variables (a test run in a corral pane has some); it
// is killed at the test's end.
func startMarked(tb testing.TB, env ...string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command("sleep", "60")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CORRAL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

func TestFindLeft(t *testing.T) {
	owner := "CORRAL_SOCKET=/tmp/find-left-" + t.Name()
	mine := startMarked(t, owner, "CORRAL_PANE=p1")
	job := startMarked(t, owner, "CORRAL_JOB=j1")
	startMarked(t, "CORRAL_SOCKET=/tmp/another-daemon", "CORRAL_PANE=p1") // another daemon's
	startMarked(t, owner)                                                 // the daemon's, no mark
	startMarked(t, owner, "CORRAL_PANE=")                                 // an empty mark
	want := map[int]string{mine.Process.Pid: "CORRAL_PANE p1", job.Process.Pid: "CORRAL_JOB j1"}
	// Start returns once sleep runs: its environment is sleep's own.
	got := FindLeft(owner, "CORRAL_PANE", "CORRAL_JOB")
	if len(got) != len(want) {
		t.Fatalf("FindLeft = %+v, want %v", got, want)
	}
	for _, l := range got {
		p, _ := osproc.Stat(l.PID)
		if want[l.PID] != l.Key+" "+l.ID || l.Start == 0 || l.Start != p.Start {
			t.Fatalf("FindLeft = %+v, want %v with their start times", got, want)
		}
	}
}

// FindLeft among processes most of which are not the daemon's.
func BenchmarkFindLeft(b *testing.B) {
	owner := "CORRAL_SOCKET=/tmp/find-left-bench"
	for i := 0; i < 200; i++ {
		if i%20 == 0 {
			startMarked(b, owner, "CORRAL_PANE=p")
		} else {
			startMarked(b, "CORRAL_SOCKET=/tmp/other")
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if n := len(FindLeft(owner, "CORRAL_PANE")); n != 10 {
			b.Fatalf("found %d, want 10", n)
		}
	}
}
