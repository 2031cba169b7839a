package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// runMany starts n panes, each a shell that waits, and returns the mean
// time of one corral run.
func runMany(t testing.TB, e *env, prefix string, n int) time.Duration {
	start := time.Now()
	for i := 0; i < n; i++ {
		e.must("run", "--name", fmt.Sprintf("%s%d", prefix, i), "--", "sh", "-c", "exec sleep 1061")
	}
	return time.Since(start) / time.Duration(n)
}

func timeLs(e *env, n int) time.Duration {
	start := time.Now()
	for i := 0; i < n; i++ {
		e.must("ls", "--json")
	}
	return time.Since(start) / time.Duration(n)
}

// timeShutdown times corral shutdown until no process of the daemon, its
// holders or its panes is left.
func timeShutdown(t testing.TB, e *env) time.Duration {
	sock := "CORRAL_SOCKET=" + filepath.Join(e.dir, "s.sock")
	left := func() int {
		n := 0
		eachPID(func(pid int) {
			if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil && bytes.Contains(env, []byte(sock+"\x00")) {
				n++
			}
		})
		return n
	}
	start := time.Now()
	e.must("shutdown")
	waitFor(t, 30*time.Second, "every process of the daemon and its panes gone", func() bool { return left() == 0 })
	return time.Since(start)
}

// A run, and a listing per pane, must not grow with the number of panes
// already there (the pane table once made every run rewrite all of it):
// a guard against O(n²) creeping back, as a ratio within one run.
func TestScaleRunCostFlat(t *testing.T) {
	proctest.Slow(t, "starts 220 panes, about 15 s")
	if os.Getenv("CORRAL_E2E_RACE") == "1" {
		// A ratio of timings means nothing under the race detector, and 220
		// panes through a race-built daemon take minutes.
		t.Skip("timings under the race detector")
	}
	// Ratios of wall times on a shared machine: a burst of load in one
	// half of a measurement can push a ratio past its bound (a shutdown
	// ×6.4 once in 20 whole runs of the package at load 20). A cost that
	// grows with the panes is past it at every measurement, load once in a
	// while: a measurement past a bound is made again, up to three times,
	// and the test fails when none is within every bound.
	var past []string
	for attempt := 1; attempt <= 3; attempt++ {
		if past = scaleRatios(t); len(past) == 0 {
			return
		}
		t.Logf("measurement %d past a bound: %s", attempt, strings.Join(past, "; "))
	}
	for _, p := range past {
		t.Error(p)
	}
}

// scaleRatios measures a run, ls --json and a shutdown at 20 and at 220
// panes, and says which ratio is past its bound.
func scaleRatios(t *testing.T) (past []string) {
	e := newEnv(t)
	t.Cleanup(func() { e.run("shutdown") })
	few := runMany(t, e, "a", 20)
	lsFew := timeLs(e, 5)
	runMany(t, e, "b", 180)
	many := runMany(t, e, "c", 20)
	lsMany := timeLs(e, 5)
	t.Logf("run: %v at 20 panes, %v at 200 (×%.1f); ls --json: %v at 40, %v at 220 (×%.1f)",
		few.Round(time.Microsecond), many.Round(time.Microsecond), float64(many)/float64(few),
		lsFew.Round(time.Microsecond), lsMany.Round(time.Microsecond), float64(lsMany)/float64(lsFew))
	// A shutdown ends the panes together, and its fixed costs weigh more
	// than its panes at this size: 11× the panes measured ×1.5 the time.
	// When each holder looked at every process of the machine for each
	// pane it ended, it was ×4.9 (×18 at 200 against 20 panes).
	// Two small shutdowns are timed right before each large one, beside
	// the same 220 panes, so a load that grows or falls during the test
	// (the large ones are a minute apart on a busy machine) weighs on both
	// sides of the ratio; the small one is the median of four (one lucky
	// fast one on a loaded machine would make the ratio say nothing of the
	// panes), the large one the quicker of two (load only ever adds time).
	var ends []time.Duration
	small := func() {
		for range 2 {
			s := newEnv(t)
			runMany(t, s, "a", 20)
			ends = append(ends, timeShutdown(t, s))
		}
	}
	small()
	endMany := timeShutdown(t, e)
	again := newEnv(t)
	runMany(t, again, "a", 220)
	small()
	endMany = min(endMany, timeShutdown(t, again))
	slices.Sort(ends)
	endFew := (ends[1] + ends[2]) / 2
	t.Logf("shutdown: %v of 20 panes, %v of 220 (×%.1f)", endFew.Round(time.Millisecond), endMany.Round(time.Millisecond),
		float64(endMany)/float64(endFew))
	// Seen here: ×1.2–2.7 on a loaded machine; the bug above gave ×4.9.
	if endMany > 4*endFew {
		past = append(past, fmt.Sprintf("shutdown of 220 panes took %v, %0.1f× that of 20 (%v)", endMany, float64(endMany)/float64(endFew), endFew))
	}
	if many > 4*few {
		past = append(past, fmt.Sprintf("a run at 200 panes costs %v, %0.1f× a run at 20 (%v)", many, float64(many)/float64(few), few))
	}
	// 5.5× the panes: linear is ~5.5×, quadratic ~30×.
	if lsMany > 15*lsFew {
		past = append(past, fmt.Sprintf("ls --json at 220 panes costs %v, %0.1f× at 40 (%v)", lsMany, float64(lsMany)/float64(lsFew), lsFew))
	}
	return past
}

// BenchmarkRunAt200 is one corral run with 200 panes already running.
func BenchmarkRunAt200(b *testing.B) {
	e := newEnv(b)
	runMany(b, e, "a", 200)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.must("run", "--rm", "--name", fmt.Sprintf("n%d", i), "--", "true")
	}
	b.StopTimer()
}

// The daemon's profiles are on its unix socket, for go tool pprof.
func TestDaemonProfiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("ls")
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", filepath.Join(e.dir, "s.sock"))
	}}, Timeout: 10 * time.Second}
	resp, err := hc.Get("http://corral/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "heap profile") {
		t.Fatalf("heap profile: %d %.200s", resp.StatusCode, b)
	}
}
