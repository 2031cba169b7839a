package main

// Pane lifecycle: removing panes and jobs, nothing left behind by kill,
// timeout, shutdown or rm, commands resolved where the user typed them,
// and spawns that do not hold the daemon.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// withArg returns the live processes whose command line holds word (a
// word no other process uses: a sleep's unique duration), but those of
// another test binary's envs (otherRun).
func withArg(word string) []int {
	return procsWhere(func(pid int, cmdline []byte) bool {
		return slices.ContainsFunc(bytes.Split(cmdline, []byte{0}), func(a []byte) bool { return string(a) == word }) &&
			proctest.Alive(pid) && !otherRun(pid)
	})
}

// envDirs are the folders of the envs this test binary made (newEnv).
var envDirs sync.Map

// otherRun reports whether process pid belongs to an env another run of
// these tests made: its CORRAL_SOCKET is in an env's folder that this
// binary did not make. Two runs at once (two worktrees, or a measure
// beside a -count run) start programs with the same words: one run's
// noneLeft would fail on the other's panes, and its reboot kill them.
func otherRun(pid int) bool {
	environ, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	for _, v := range bytes.Split(environ, []byte{0}) {
		if sock, ok := bytes.CutPrefix(v, []byte("CORRAL_SOCKET=")); ok {
			dir := filepath.Dir(string(sock))
			if filepath.Dir(dir) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(dir), envPrefix) {
				return false // not an env's: this run's to answer for
			}
			_, ours := envDirs.Load(dir)
			return !ours
		}
	}
	return false
}

// procsWhere returns the processes whose pid and command line match, read
// in-process (a shell's loop over /proc costs a few processes per process,
// seconds while other tests run theirs).
func procsWhere(match func(pid int, cmdline []byte) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && match(pid, b) {
			out = append(out, pid)
		}
	}
	return out
}

// waitFor waits until ok holds, failing the test after d.
func waitFor(t testing.TB, d time.Duration, what string, ok func() bool) {
	t.Helper()
	if !proctest.WaitFor(d, ok) {
		t.Fatalf("waited %v for %s", d, what)
	}
}

// noneLeft waits (briefly: ending them is the daemon's job, not the
// waiter's) until no process holds one of words, and fails otherwise.
func noneLeft(t *testing.T, when string, words ...string) {
	t.Helper()
	var left []int
	if !proctest.WaitFor(2*time.Second, func() bool {
		left = left[:0]
		for _, w := range words {
			left = append(left, withArg(w)...)
		}
		return len(left) == 0
	}) {
		t.Fatalf("%s: processes left behind: %v", when, left)
	}
}

// panes are corral ls --json's panes, read from the daemon when one runs
// (else corral ls starts one).
func (e *env) panes() []paneJSON {
	e.t.Helper()
	var ps []paneJSON
	e.lookOrRun("/v1/panes", &ps, "ls", "--json")
	return ps
}

func (e *env) has(ref string) bool {
	for _, p := range e.panes() {
		if p.ID == ref || p.Name == ref {
			return true
		}
	}
	return false
}

// A grandchild that left with setsid keeps the terminal open; kill,
// shutdown and SIGTERM to the daemon end it all the same, at once.
func TestSetsidGrandchildLeftBehindNowhere(t *testing.T) {
	proctest.Slow(t, "about 7 s")
	t.Parallel()
	for _, how := range []string{"kill", "shutdown", "sigterm"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel() // each has its own daemon and its own sleeps' words
			e := newEnv(t)
			a, b := "15.1"+strconv.Itoa(len(how)), "15.2"+strconv.Itoa(len(how))
			e.must("run", "--name", "x", "--", "sh", "-c", "setsid sleep "+a+" & sleep "+b)
			waitFor(t, 5*time.Second, "the setsid grandchild", func() bool { return len(withArg(a)) == 1 && len(withArg(b)) == 1 })
			daemon := daemonPID(t, e)
			start := time.Now()
			switch how {
			case "kill":
				e.runWithin(10*time.Second, "kill", "x")
				e.must("wait", "x", "--state", "exited", "--timeout", "5s")
			case "shutdown":
				e.runWithin(10*time.Second, "shutdown")
			case "sigterm":
				syscall.Kill(daemon, syscall.SIGTERM)
				waitFor(t, 10*time.Second, "the daemon to end", func() bool { return !proctest.Alive(daemon) })
			}
			took := time.Since(start)
			t.Logf("%s with a setsid grandchild took %v", how, took)
			noneLeft(t, how, a, b)
			if took > 5*time.Second {
				t.Errorf("%s took %v", how, took)
			}
		})
	}
}

// corral exec --timeout ends the run on time even when a grandchild holds
// its output, and leaves no process behind, in whatever group or session.
func TestExecTimeoutLeavesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := "echo '" + initJSON + "'; setsid sleep 16.1 & perl -e 'setpgrp(0,0); exec @ARGV' sleep 16.2 & sleep 16.3"
	start := time.Now()
	_, code := e.runWithin(10*time.Second, "exec", "--agent", "claude", "--timeout", "2s", "--", "sh", "-c", script)
	took := time.Since(start)
	t.Logf("corral exec --timeout 2s took %v", took)
	if code != 124 {
		t.Errorf("exit %d, want 124", code)
	}
	noneLeft(t, "exec --timeout", "16.1", "16.2", "16.3")
	if took > 6*time.Second {
		t.Errorf("corral exec --timeout 2s took %v", took)
	}
}

// A program that exits leaves nothing behind either; the orphans the
// daemon adopts are reaped, not left as zombies.
func TestExitedPaneLeavesNoZombies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("run", "--name", "z", "--", "sh", "-c", "setsid sh -c 'sleep 0.2' & setsid sleep 17.1 & sleep 0.5")
	e.must("wait", "z", "--state", "exited", "--timeout", "5s")
	noneLeft(t, "exit", "17.1")
	daemon := daemonPID(t, e)
	waitFor(t, 5*time.Second, "no zombie children of the daemon", func() bool {
		out, _ := exec.Command("sh", "-c", "grep -l '^PPid:[[:space:]]*"+strconv.Itoa(daemon)+"$' /proc/[0-9]*/status 2>/dev/null | xargs -r grep -l '^State:[[:space:]]*Z' 2>/dev/null").Output()
		return strings.TrimSpace(string(out)) == ""
	})
}

// corral rm removes ended panes and jobs and frees their names; --force
// ends a running one first; run --rm removes a pane when its program
// exits; each removal is an event.
func TestRemovePanes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("run", "--name", "t1", "--", "sh", "-c", "exit 3")
	e.must("wait", "t1", "--state", "exited", "--timeout", "5s")
	e.must("run", "--name", "live", "--", "sh", "-c", "sleep 18.1 & sleep 18.2")
	waitFor(t, 5*time.Second, "live's sleeps", func() bool { return len(withArg("18.2")) == 1 })
	if _, errs, code := e.run("rm", "live"); code == 0 || !strings.Contains(errs, "--force") {
		t.Fatalf("rm of a running pane: exit %d %q", code, errs)
	}
	e.must("rm", "t1")
	if e.has("t1") {
		t.Fatal("t1 is still listed after rm")
	}
	// The name is free again.
	e.must("run", "--name", "t1", "--", "true")
	e.must("wait", "t1", "--state", "exited", "--timeout", "5s")
	e.must("rm", "--force", "live", "t1")
	if e.has("live") || e.has("t1") {
		t.Fatalf("left after rm --force: %+v", e.panes())
	}
	noneLeft(t, "rm --force", "18.1", "18.2")
	if _, errs, code := e.run("rm", "nosuch"); code == 0 || !strings.Contains(errs, "no pane") {
		t.Fatalf("rm of no pane: exit %d %q", code, errs)
	}

	id := strings.TrimSpace(e.must("run", "--rm", "--", "sh", "-c", "sleep 0.3"))
	waitFor(t, 10*time.Second, "run --rm's pane to go", func() bool { return !e.has(id) })

	// A job too, once it ended.
	e.must("exec", "--name", "j", "--agent", "claude", "--", "sh", "-c", "echo '"+initJSON+"'; echo '"+resultJSON+"'")
	e.must("rm", "j")
	if e.has("j") {
		t.Fatal("job j is still listed after rm")
	}

	events := e.must("events", "--since", "1m")
	if n := strings.Count(events, `"state":"removed"`); n != 5 {
		t.Fatalf("%d removed events, want 5:\n%s", n, events)
	}
}

// Exited panes are pruned after [panes] prune_after.
func TestPruneExitedPanes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	conf := filepath.Join(e.dir, "config", "corral")
	if err := os.MkdirAll(conf, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(conf, "config.toml"), []byte("[panes]\nprune_after = \"1s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must("run", "--name", "running", "--", "sleep", "19.1")
	e.must("run", "--name", "old", "--", "true")
	waitFor(t, 20*time.Second, "the exited pane to be pruned", func() bool { return !e.has("old") })
	if !e.has("running") {
		t.Fatal("a running pane was pruned")
	}
	var ev struct{ Name, State, Previous string }
	for _, l := range strings.Split(strings.TrimSpace(e.must("events", "--since", "1m")), "\n") {
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Name == "old" && ev.State == "removed" {
			break
		}
	}
	if ev.Name != "old" || ev.State != "removed" || ev.Previous != "exited" {
		t.Fatalf("last event of the pruned pane: %+v", ev)
	}
}

// corral run -- ./script.sh runs the caller's script, from the caller's
// folder (or --cwd), with the caller's PATH.
func TestRunResolvesWhereTyped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("ls") // the daemon starts elsewhere, with another PATH
	work := filepath.Join(e.dir, "work")
	bin := filepath.Join(e.dir, "mybin")
	for _, d := range []string{work, bin} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := proctest.WriteExecutable(filepath.Join(work, "script.sh"), []byte("#!/bin/sh\necho from-script-$(pwd)\nsleep 5\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := proctest.WriteExecutable(filepath.Join(bin, "mytool"), []byte("#!/bin/sh\necho from-mytool\nsleep 5\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	runIn := func(dir string, args ...string) string {
		cmd := exec.Command(corralBin, args...)
		cmd.Dir = dir
		for _, v := range e.vars {
			if strings.HasPrefix(v, "PATH=") {
				v = "PATH=" + bin + ":" + os.Getenv("PATH")
			}
			cmd.Env = append(cmd.Env, v)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("corral %v in %s: %v: %s", args, dir, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	screen := func(id, want string) {
		waitFor(t, 5*time.Second, want+" on "+id+"'s screen", func() bool { return strings.Contains(e.screen(id), want) })
	}
	screen(runIn(work, "run", "--", "./script.sh"), "from-script-"+work)
	screen(runIn(e.dir, "run", "--cwd", "work", "--", "./script.sh"), "from-script-"+work)
	screen(runIn(e.dir, "run", "--", "mytool"), "from-mytool")
	// corral exec too.
	if err := proctest.WriteExecutable(filepath.Join(bin, "myagent"), []byte("#!/bin/sh\necho '"+initJSON+"'; echo '"+resultJSON+"'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	runIn(work, "exec", "--agent", "claude", "--", "myagent")
	runIn(work, "exec", "--agent", "claude", "--", "../mybin/myagent")
}

// A spawn that waits (here on a FIFO where the Gemini integration looks
// for corral's extension) holds no other request: corral ls answers
// meanwhile.
func TestSlowSpawnHoldsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("ls")
	home := filepath.Join(e.dir, "fifohome")
	ext := filepath.Join(home, ".gemini", "extensions", "corral", "hooks")
	if err := os.MkdirAll(ext, 0o700); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(ext, "hooks.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	run := exec.Command(corralBin, "run", "--name", "g", "--env", "HOME="+home, "--", "sh", "-c", "exit 0")
	run.Env, run.Dir = e.vars, e.dir
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Let the stuck spawn go on.
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		run.Wait()
	}()
	// The spawn is stuck once a thread of the daemon waits in the FIFO's
	// open for a writer.
	daemon := daemonPID(t, e)
	waitFor(t, 10*time.Second, "the spawn to open the FIFO", func() bool {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", daemon))
		for _, w := range tasks {
			if b, _ := os.ReadFile(w); string(b) == "wait_for_partner" {
				return true
			}
		}
		return false
	})
	start := time.Now()
	e.runWithin(5*time.Second, "ls")
	t.Logf("corral ls during a stuck spawn took %v", time.Since(start))
}

// corral ls stays quick while 20 panes start at once.
func lsDuringConcurrentRuns(t *testing.T) {
	e := newEnv(t)
	e.must("ls")
	quiet := lsMedian(e, 5)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var lsTimes []time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			e.run("ls")
			lsTimes = append(lsTimes, time.Since(start))
		}
	}()
	var runs sync.WaitGroup
	for i := range 20 {
		runs.Add(1)
		go func() {
			defer runs.Done()
			e.run("run", "--name", "c"+strconv.Itoa(i), "--", "sh", "-c", "exit 0")
		}()
	}
	runs.Wait()
	close(stop)
	wg.Wait()
	var worst time.Duration
	for _, d := range lsTimes {
		worst = max(worst, d)
	}
	t.Logf("corral ls: %v quiet; during 20 concurrent runs %d calls, worst %v", quiet, len(lsTimes), worst)
}
