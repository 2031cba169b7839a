package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/proctest"
)

// serve --replace while commands keep coming: the old daemon passes its
// lock and socket to the new one, so no command in between starts a
// daemon of its own (which would make --replace give up), none fails, and
// the panes stay.
func TestReplaceWhileCommandsRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("run", "--name", "a", "--", "sleep", "1037")
	e.must("run", "--name", "b", "--", "sleep", "1037")
	before := map[string]int{}
	for _, p := range e.panes() {
		before[p.Name] = p.PID
	}
	other := anotherBuild(t, e)
	// Commands run all along, each starting a daemon when none answers.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var ran, failed atomic.Int64
	var failures sync.Map
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				cmd := exec.Command(corralBin, "ls")
				cmd.Env, cmd.Dir = e.vars, e.dir
				out, err := cmd.CombinedOutput()
				ran.Add(1)
				if err != nil {
					failed.Add(1)
					failures.Store(strings.TrimSpace(string(out)), true)
				}
			}
		}()
	}
	// Cleanups run last first: the commands stop before the rest ends.
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	var servers []*exec.Cmd
	t.Cleanup(func() {
		for _, c := range servers {
			c.Process.Kill()
			c.Wait()
		}
	})
	t.Cleanup(halt)
	for round, bin := range []string{other, corralBin, other, corralBin} {
		prev := daemonPIDAny(e)
		cmd := exec.Command(bin, "serve", "--replace")
		cmd.Env, cmd.Dir = e.vars, e.dir
		logf, _ := os.Create(filepath.Join(e.dir, "replace.log"))
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		servers = append(servers, cmd)
		waitFor(t, 20*time.Second, "the new daemon", func() bool {
			return daemonPIDAny(e) == cmd.Process.Pid
		})
		if proctest.Alive(prev) && round > 0 {
			waitFor(t, 5*time.Second, "the old daemon to end", func() bool { return !proctest.Alive(prev) })
		}
		if round > 0 {
			old := servers[round-1]
			if err := old.Wait(); err != nil {
				t.Errorf("round %d: the previous serve --replace: %v", round, err)
			}
		}
	}
	halt()
	if n := failed.Load(); n > 0 {
		var msgs []string
		failures.Range(func(k, _ any) bool { msgs = append(msgs, k.(string)); return true })
		t.Errorf("%d of %d commands failed during the hand-overs:\n%s", n, ran.Load(), strings.Join(msgs, "\n"))
	}
	t.Logf("%d commands ran during 4 hand-overs", ran.Load())
	after := map[string]int{}
	for _, p := range e.panes() {
		after[p.Name] = p.PID
	}
	if len(after) != 2 || after["a"] != before["a"] || after["b"] != before["b"] {
		t.Fatalf("panes before %v, after %v", before, after)
	}
	e.must("shutdown")
	noneLeft(t, "shutdown", "1037")
}

// daemonPIDAny is the pid of the daemon serving e, whichever binary it
// runs (0: none answers).
func daemonPIDAny(e *env) int {
	var st struct {
		PID int `json:"pid"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if client.New(filepath.Join(e.dir, "s.sock")).Do(ctx, "GET", "/v1/status", nil, &st) != nil {
		return 0
	}
	return st.PID
}

// anotherBuild writes corral's binary into e's folder with its Go build ID
// changed: a build of another fingerprint (the fingerprint comes from the
// build ID's content hash, so a byte appended would not do).
func anotherBuild(t *testing.T, e *env) string {
	t.Helper()
	data, err := otherBuildBytes()
	if err != nil {
		t.Fatalf("another build: %v", err)
	}
	other := filepath.Join(e.dir, "corral-other")
	if err := proctest.WriteExecutable(other, data, 0o755); err != nil {
		t.Fatalf("writing another build: %v", err)
	}
	return other
}

var otherBuildBytes = sync.OnceValues(func() ([]byte, error) {
	out, err := exec.Command("go", "tool", "buildid", corralBin).Output()
	if err != nil {
		return nil, fmt.Errorf("go tool buildid %s: %w", corralBin, err)
	}
	id := bytes.TrimSpace(out)
	data, err := os.ReadFile(corralBin)
	if err != nil {
		return nil, err
	}
	if len(id) < 20 || !bytes.Contains(data, id) {
		return nil, fmt.Errorf("build ID %q is not in %s", id, corralBin)
	}
	changed := bytes.Clone(id)
	if last := &changed[len(changed)-1]; *last == 'A' {
		*last = 'B'
	} else {
		*last = 'A'
	}
	return bytes.ReplaceAll(data, id, changed), nil
})
