package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/proctest"
)

// runWithin runs corral and fails the test if it does not end in time.
func (e *env) runWithin(d time.Duration, args ...string) (string, int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, corralBin, args...)
	cmd.Env, cmd.Dir = e.vars, e.dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		e.t.Fatalf("corral %v hung for %v:\n%s", args, d, out)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return string(out), code
}

// Special files in the rules folder are refused without blocking or
// reading forever; the daemon starts, serves and reloads; and rules list
// says what the daemon really has in force when a user file breaks.
func TestRulesFolderSpecialFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := filepath.Join(e.dir, "config", "corral", "rules")
	os.MkdirAll(dir, 0o700)
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.toml"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/dev/zero", filepath.Join(dir, "zero.toml"))
	codex, err := os.ReadFile("../../agents/codex/rules.toml")
	if err != nil {
		t.Fatal(err)
	}
	userCodex := filepath.Join(dir, "codex.toml")
	os.WriteFile(userCodex, codex, 0o600)

	out, _ := e.runWithin(10*time.Second, "rules", "list")
	if !strings.Contains(out, "no daemon running") || !strings.Contains(out, "fifo.toml: not a regular file (a FIFO)") ||
		!strings.Contains(out, "zero.toml: not a regular file (a device)") || !strings.Contains(out, userCodex) {
		t.Fatalf("rules list without a daemon:\n%s", out)
	}
	if out, code := e.runWithin(10*time.Second, "rules", "check"); code != 1 || !strings.Contains(out, "FIFO") {
		t.Fatalf("rules check: exit %d\n%s", code, out)
	}
	e.runWithin(15*time.Second, "run", "--name", "p", "--", "sleep", "60")

	// The user's codex.toml breaks: the daemon keeps its last good version
	// and rules list says so.
	os.WriteFile(userCodex, []byte("name = \"codex\"\n[[rule]]\nid = \n"), 0o600)
	if !proctest.WaitFor(10*time.Second, func() bool {
		out, _ = e.runWithin(10*time.Second, "rules", "list")
		return strings.Contains(out, "codex.toml:3")
	}) {
		t.Fatalf("the daemon never reported the broken file:\n%s", out)
	}
	if !strings.Contains(out, "in force in the running daemon") || !strings.Contains(out, "the rules in force stay") {
		t.Fatalf("rules list with a daemon:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "codex ") && !strings.Contains(line, userCodex) {
			t.Fatalf("rules list misreports codex's source: %q\n%s", line, out)
		}
	}
}

// With no XDG_RUNTIME_DIR, the socket folder in the temporary directory is
// refused when it is not the user's own private folder.
func TestSocketFolderHijack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tmp := filepath.Join(e.dir, "tmp")
	os.MkdirAll(tmp, 0o777)
	vars := []string{"TMPDIR=" + tmp}
	for _, v := range e.vars {
		if !strings.HasPrefix(v, "CORRAL_SOCKET=") {
			vars = append(vars, v)
		}
	}
	e.vars = vars
	folder := filepath.Join(tmp, "corral-"+strconv.Itoa(os.Getuid()))
	os.Mkdir(folder, 0o777)
	os.Chmod(folder, 0o777) // as another user would leave it
	out, code := e.runWithin(10*time.Second, "ls")
	if code == 0 || !strings.Contains(out, "others can write to it") || !strings.Contains(out, folder) {
		t.Fatalf("a world-writable socket folder was used (exit %d):\n%s", code, out)
	}
	if out, code := e.runWithin(10*time.Second, "serve"); code == 0 || !strings.Contains(out, "refusing the socket folder") {
		t.Fatalf("serve used it (exit %d):\n%s", code, out)
	}
	// A symbolic link to a folder someone else controls is refused too.
	os.Remove(folder)
	os.Symlink(tmp, folder)
	if out, code := e.runWithin(10*time.Second, "ls"); code == 0 || !strings.Contains(out, "not a folder") {
		t.Fatalf("a linked socket folder was used (exit %d):\n%s", code, out)
	}
	// Its own private folder works.
	os.Remove(folder)
	if out, code := e.runWithin(15*time.Second, "ls"); code != 0 {
		t.Fatalf("a fresh private folder was refused (exit %d):\n%s", code, out)
	}
	e.runWithin(10*time.Second, "shutdown")
}

// A pane's program inherits nothing of the daemon's: no other pane's
// terminal, no socket, no log. Only its own terminal, as 0, 1 and 2.
func TestPaneInheritsNoDescriptors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.runWithin(15*time.Second, "run", "--name", "first", "--", "sleep", "60")
	// A job's pipes, open while the probe runs (corral exec follows the job
	// to its end, so it runs beside the test).
	job := exec.Command(corralBin, "exec", "--name", "job", "--timeout", "60s", "--", "sh", "-c", "sleep 30")
	job.Env = e.vars
	if err := job.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { job.Process.Kill(); job.Wait() })
	waitFor(t, 10*time.Second, "the job to run", func() bool {
		_, _, code := e.run("wait", "job", "--state", "working", "--timeout", "1s")
		return code == 0
	})
	// ls itself lists its own descriptors: no shell in between to add its own.
	e.must("run", "--name", "probe", "--", "ls", "-l", "/proc/self/fd/")
	e.must("wait", "probe", "--state", "exited", "--timeout", "10s")
	screen := e.must("screen", "probe")
	listed := 0
	for _, line := range strings.Split(screen, "\n") {
		before, target, ok := strings.Cut(line, " -> ")
		if !ok {
			continue
		}
		listed++
		fields := strings.Fields(before)
		fd := fields[len(fields)-1]
		if (fd == "0" || fd == "1" || fd == "2") && strings.HasPrefix(target, "/dev/pts/") {
			continue
		}
		if strings.HasPrefix(target, "/proc/") { // ls's own listing
			continue
		}
		t.Errorf("the pane's program inherited fd %s -> %s", fd, target)
	}
	if listed < 3 {
		t.Fatalf("no listing:\n%s", screen)
	}
}

// A stopped pane still ends when killed: the signal is followed by
// SIGCONT.
func TestKillStoppedPane(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("run", "--name", "stopped", "--", "sh", "-c", "trap 'exit 7' TERM; while :; do sleep 0.1; done")
	e.must("kill", "stopped", "--signal", "STOP")
	pid := e.pane("stopped").PID
	waitFor(t, 5*time.Second, "the pane's program to stop", func() bool { return stoppedAt(pid) })
	e.must("kill", "stopped", "--signal", "TERM")
	if _, errs, code := e.run("wait", "stopped", "--state", "exited", "--timeout", "5s"); code != 0 {
		t.Fatalf("a stopped pane outlived kill (%s)", errs)
	}
}

// stoppedAt reports whether process pid is stopped, or waits on a stopped
// child: a shell that forks with vfork (dash) sleeps uninterruptibly (D)
// until its child execs, and a SIGSTOP to the group that catches the
// child before its exec leaves the shell in D, never T, until SIGCONT.
func stoppedAt(pid int) bool {
	switch s, _ := proctest.State(pid); s {
	case "T":
		return true
	case "D":
		found := false
		eachPID(func(c int) {
			if s, ppid := proctest.State(c); ppid == pid && s == "T" {
				found = true
			}
		})
		return found
	}
	return false
}

// Every size and field entering through the API is bounded, as the CLI's
// flags are.
func TestAPIBoundsNewPanes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("ls") // start the daemon
	c := client.New(filepath.Join(e.dir, "s.sock"))
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		req  api.RunRequest
		want string
	}{
		{"huge", api.RunRequest{Command: []string{"true"}, Cols: 3000, Rows: 3000}, "from 2 to 1000"},
		{"wide", api.RunRequest{Command: []string{"true"}, Cols: 65537, Rows: 24}, "from 2 to 1000"},
		{"negative", api.RunRequest{Command: []string{"true"}, Cols: -5, Rows: 24}, "from 2 to 1000"},
		{"one side", api.RunRequest{Command: []string{"true"}, Cols: 80}, "from 2 to 1000"},
		{"long name", api.RunRequest{Command: []string{"true"}, Name: strings.Repeat("n", 65)}, "at most 64"},
		{"NUL", api.RunRequest{Command: []string{"tr\x00ue"}}, "NUL"},
	} {
		err := c.Do(ctx, "POST", "/v1/panes", tt.req, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v; want an error saying %q", tt.name, err, tt.want)
		}
	}
	// A body past the limit is refused whole.
	big := api.RunRequest{Command: []string{"true"}, Env: []string{"X=" + strings.Repeat("x", 2<<20)}}
	if err := c.Do(ctx, "POST", "/v1/panes", big, nil); err == nil {
		t.Error("a 2 MB request was taken")
	}
	var ps []api.Pane
	c.Do(ctx, "GET", "/v1/panes", nil, &ps)
	if len(ps) != 0 {
		t.Fatalf("panes were started: %+v", ps)
	}
}

// corral version tells the client's build from the daemon's.
func TestVersionAgainstTheDaemon(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if out, _ := e.runWithin(10*time.Second, "--version"); !strings.Contains(out, "daemon: not running") {
		t.Fatalf("no daemon:\n%s", out)
	}
	e.must("ls") // starts the daemon from corralBin
	if out, _ := e.runWithin(10*time.Second, "version"); !strings.Contains(out, "daemon: the same build") {
		t.Fatalf("same build:\n%s", out)
	}
	// Another build: the same program with a byte more.
	other := anotherBuild(t, e)
	cmd := exec.Command(other, "version", "--json")
	cmd.Env, cmd.Dir = e.vars, e.dir
	out, err := cmd.Output()
	var v struct {
		Client, Daemon struct{ Binary string }
		Same           *bool
	}
	if err != nil || json.Unmarshal(out, &v) != nil || v.Same == nil || *v.Same || v.Client.Binary == v.Daemon.Binary {
		t.Fatalf("another build (%v):\n%s", err, out)
	}
}

// A planted fleet config that is a FIFO or a link to /dev/zero does not
// hold the daemon: it starts, says why it is in no fleet, and answers.
func TestFleetConfigSpecialFiles(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"fifo", "zero"} {
		e := newEnv(t)
		dir := filepath.Join(e.dir, "state", "fleet")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(e.dir, "state"), 0o700)
		path := filepath.Join(dir, "config.json")
		var err error
		if kind == "fifo" {
			err = syscall.Mkfifo(path, 0o600)
		} else {
			err = os.Symlink("/dev/zero", path)
		}
		if err != nil {
			t.Fatal(err)
		}
		if out, code := e.runWithin(15*time.Second, "ls"); code != 0 {
			t.Fatalf("%s: ls: exit %d: %s", kind, code, out)
		}
		log, _ := os.ReadFile(filepath.Join(e.dir, "state", "daemon.log"))
		if !strings.Contains(string(log), "not a regular file") {
			t.Fatalf("%s: the daemon's log does not say why: %s", kind, log)
		}
	}
}

// A thousand idle connections to the board's port do not starve the
// daemon: the board keeps at most board.MaxConns, and ls, run and board
// still answer on the unix socket.
func TestBoardIdleConnectionsDoNotStarveTheDaemon(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := strings.TrimSpace(strings.SplitN(e.must("board", "--no-browser"), "\n", 2)[0])
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	pid := daemonPID(t, e)
	fds := func() int {
		entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		return len(entries)
	}
	before := fds()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 1000; i++ {
		c, err := net.DialTimeout("tcp", u.Host, time.Second)
		if err != nil {
			continue // refused at once is fine
		}
		conns = append(conns, c)
	}
	// A measured window: what the daemon took in of the 1000 connections
	// within it is counted, not waited for.
	time.Sleep(200 * time.Millisecond)
	if n := fds(); n > before+300 {
		t.Fatalf("the daemon holds %d descriptors (%d before): the board's connections are not capped", n, before)
	}
	for _, args := range [][]string{{"ls"}, {"run", "--name", "after", "--", "sleep", "60"}, {"board", "--no-browser"}} {
		if out, code := e.runWithin(10*time.Second, args...); code != 0 {
			t.Fatalf("corral %v with 1000 idle board connections: exit %d: %s", args, code, out)
		}
	}
}

// kill ends a program that ignores TERM (TERM, then KILL after --grace, as
// docker stop does); --signal sends exactly one signal and says when the
// program lives on; kill of an ended pane says nothing is running.
func TestKillEscalatesAfterGrace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("run", "--name", "stubborn", "--", "sh", "-c", `trap "" TERM; echo ready; while :; do sleep 1; done`)
	waitFor(t, 10*time.Second, "ready", func() bool { return strings.Contains(e.screen("stubborn"), "ready") })
	_, errs, code := e.run("kill", "stubborn", "--signal", "TERM")
	if code != 0 || !strings.Contains(errs, "still running") {
		t.Fatalf("kill --signal TERM of a program ignoring it: exit %d %q", code, errs)
	}
	start := time.Now()
	out, errs, code := e.run("kill", "stubborn", "--grace", "1s", "--json")
	var p struct {
		State    string
		ExitCode *int `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil || code != 0 || p.State != "exited" || p.ExitCode == nil || *p.ExitCode != 128+9 {
		t.Fatalf("kill: exit %d %q %+v %v", code, errs, p, err)
	}
	if d := time.Since(start); d < time.Second || d > 6*time.Second {
		t.Fatalf("kill took %v with --grace 1s", d)
	}
	if _, errs, code := e.run("kill", "stubborn"); code != 0 || errs != "" {
		t.Fatalf("kill of an ended pane: exit %d %q", code, errs)
	}
	if _, _, code := e.run("kill", "stubborn", "--grace", "1h"); code != 2 {
		t.Fatalf("--grace 1h: exit %d, want 2", code)
	}
}
