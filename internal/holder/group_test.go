package holder

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// The test binary is also the holder: "hold" runs Main.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "hold" {
		os.Exit(Main(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func paneConfig(dir, id, script string) Config {
	mark := "CORRAL_PANE=" + id
	return Config{Socket: filepath.Join(dir, id+".sock"), Secret: strings.Repeat("s", 64), Path: "/bin/sh",
		Argv: []string{"sh", "-c", script}, Dir: "/", Env: []string{"PATH=/usr/bin:/bin", mark}, Cols: 80, Rows: 24, Mark: mark}
}

// output reads a stream connection's output until it holds want.
func output(t *testing.T, c *Conn, want string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	var got strings.Builder
	for !strings.Contains(got.String(), want) {
		m, err := c.Next()
		if err != nil {
			t.Fatalf("waiting for %q: %v (got %q)", want, err, got.String())
		}
		got.Write(m.Output)
	}
}

// collect ends a pane through its connection, as a daemon does.
func collect(t *testing.T, c *Conn) {
	t.Helper()
	if err := c.Kill(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	for {
		m, err := c.Next()
		if err != nil {
			t.Fatalf("waiting for the exit: %v", err)
		}
		if m.Exit {
			break
		}
	}
	if err := c.Collect(); err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func waitGone(t *testing.T, what string, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for proctest.Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still runs", what, pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Panes share holder processes, Size to a process; each pane is its own
// (socket, secret, terminal); a process ends with its last pane, and the
// next start then goes to a new one. A stray pane (no daemon knows its
// secret) is ended alone, not its process's other panes.
func TestPoolGroupsPanes(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	pool := &Pool{Exe: os.Args[0], Stderr: os.Stderr, Size: 2}
	start := func(id string) (Started, *Conn) {
		t.Helper()
		cfg := paneConfig(dir, id, "echo ready-"+id+"; exec sleep 1041")
		st, err := pool.Start(cfg, 10*time.Second)
		if err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
		c, err := DialStream(cfg.Socket, cfg.Secret, 5*time.Second)
		if err != nil {
			t.Fatalf("dial %s: %v", id, err)
		}
		output(t, c, "ready-"+id)
		if c.Welcome.HolderPID != st.PID || c.Welcome.ProgramPID != st.ProgramPID {
			t.Fatalf("%s: welcome %+v, started %+v", id, c.Welcome, st.Ready)
		}
		return st, c
	}
	a, ca := start("a")
	b, cb := start("b")
	c, cc := start("c")
	t.Cleanup(func() {
		for _, st := range []Started{a, b, c} {
			syscall.Kill(st.PID, syscall.SIGTERM)
		}
	})
	if a.PID != b.PID || c.PID == a.PID {
		t.Fatalf("holders: a %d, b %d, c %d; want a and b in one, c in another", a.PID, b.PID, c.PID)
	}
	// The first process ends with its last pane, not before.
	collect(t, ca)
	if !proctest.Alive(b.PID) {
		t.Fatal("the holder ended with panes left")
	}
	collect(t, cb)
	waitGone(t, "the holder of a and b", a.PID)
	if _, err := os.Stat(filepath.Join(dir, "a.sock")); err == nil {
		t.Error("a's socket outlived its pane")
	}

	// d goes with c. No daemon connects to it: a stray, ended alone, and
	// what it held is let go (the process serves on).
	fds := openFDs(c.PID)
	d, err := pool.Start(paneConfig(dir, "d", "exec sleep 1042"), 10*time.Second)
	if err != nil || d.PID != c.PID {
		t.Fatalf("start d: %v (holder %d, c's %d)", err, d.PID, c.PID)
	}
	if err := EndStray(filepath.Join(dir, "c.sock"), time.Second); err == nil {
		t.Fatal("a pane a daemon holds was ended as a stray")
	}
	if err := EndStray(filepath.Join(dir, "d.sock"), time.Second); err != nil {
		t.Fatalf("end the stray: %v", err)
	}
	waitGone(t, "the stray's program", d.ProgramPID)
	deadline := time.Now().Add(5 * time.Second)
	for _, err := os.Stat(filepath.Join(dir, "d.sock")); err == nil; _, err = os.Stat(filepath.Join(dir, "d.sock")) {
		if time.Now().After(deadline) {
			t.Fatal("the stray's socket is still there")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !proctest.Alive(c.ProgramPID) {
		t.Fatal("ending the stray ended its neighbour")
	}
	for openFDs(c.PID) > fds {
		if time.Now().After(deadline) {
			t.Fatalf("the holder keeps %d descriptors, %d before the stray", openFDs(c.PID), fds)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cc.Kill(0) // still served
	collect(t, cc)
	waitGone(t, "the holder of c", c.PID)

	// The process the pool would use has ended: the next start goes to a
	// new one.
	e, ce := start("e")
	if e.PID == c.PID {
		t.Fatal("a start in an ended holder")
	}
	collect(t, ce)
	waitGone(t, "the holder of e", e.PID)
}

// SIGTERM to a holder process ends every pane of it; Abandon ends one.
func TestPoolSigtermAndAbandon(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	pool := &Pool{Exe: os.Args[0], Stderr: os.Stderr}
	var sts []Started
	for _, id := range []string{"x", "y", "z"} {
		st, err := pool.Start(paneConfig(dir, id, "exec sleep 1043"), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		sts = append(sts, st)
	}
	t.Cleanup(func() { syscall.Kill(sts[0].PID, syscall.SIGKILL) })
	sts[2].Abandon()
	waitGone(t, "the abandoned pane's program", sts[2].ProgramPID)
	if !proctest.Alive(sts[0].ProgramPID) || !proctest.Alive(sts[1].ProgramPID) {
		t.Fatal("Abandon ended another pane")
	}
	syscall.Kill(sts[0].PID, syscall.SIGTERM)
	for _, st := range sts[:2] {
		waitGone(t, "a program after its holder's SIGTERM", st.ProgramPID)
	}
	waitGone(t, "the holder after SIGTERM", sts[0].PID)
}

// A pane that fails to start is answered with its error, and a holder
// whose only start failed ends.
func TestPoolStartFails(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	pool := &Pool{Exe: os.Args[0], Stderr: os.Stderr}
	cfg := paneConfig(dir, "bad", "true")
	cfg.Path = filepath.Join(dir, "no-such-program")
	_, err := pool.Start(cfg, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "no-such-program") {
		t.Fatalf("start of a missing program: %v", err)
	}
	pool.mu.Lock()
	pid := pool.cur.cmd.Process.Pid
	pool.mu.Unlock()
	waitGone(t, "a holder whose only start failed", pid)
	if err := EndStray(filepath.Join(dir, "none.sock"), time.Second); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("EndStray of no socket: %v", err)
	}
}

func openFDs(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents)
}
