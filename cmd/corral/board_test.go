package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// The terminal board in a real tmux: it lists the panes, puts a blocked
// one first, jumps to it with g, answers it with y, and quits with q.
func TestTerminalBoardInTmux(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("run", "--name", "alpha", "--agent", "claude-code", "--", corralBin, "fake-agent")
	e.must("run", "--name", "beta", "--agent", "claude-code", "--", corralBin, "fake-agent", "--command", "make deploy")
	keys, await, running := boardInTmux(t, e)
	await("both panes", func(s string) bool {
		return strings.Contains(s, "2 panes") && strings.Contains(s, "alpha") && strings.Contains(s, "beta")
	})

	e.must("send", "beta", "ask", "--enter")
	s := await("beta blocked first", func(s string) bool { return strings.Contains(s, "1 blocked") })
	lines := strings.Split(s, "\n")
	if !strings.HasPrefix(strings.TrimSpace(lines[1]), "BLOCKED") || !strings.Contains(lines[2], "beta") || !strings.Contains(lines[2], "blocked/permission") {
		t.Fatalf("blocked pane not first:\n%s", s)
	}
	keys("g")
	await("beta selected with its preview", func(s string) bool {
		return strings.Contains(s, "▸ ") && strings.Contains(s, "── beta") && strings.Contains(s, "make deploy")
	})
	keys("y")
	e.must("wait", "beta", "--state", "done,idle", "--timeout", "10s")
	await("no pane blocked", func(s string) bool { return strings.Contains(s, "0 blocked") })
	keys("q")
	waitFor(t, 10*time.Second, "the board to quit", func() bool { return !running() })
}

// boardInTmux starts e's terminal board in a tmux server of its own and
// returns a way to type keys into it, to wait for its screen, and to tell
// whether it still runs.
func boardInTmux(t *testing.T, e *env) (keys func(...string), await func(what string, ok func(string) bool) string, running func() bool) {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		need(t, "tmux (apt-get install tmux)")
	}
	sock := filepath.Join(e.dir, "tmux.sock")
	tm := func(args ...string) string {
		cmd := exec.Command(tmux, append([]string{"-S", sock, "-f", "/dev/null"}, args...)...)
		cmd.Env = append(append([]string(nil), e.vars...), "TERM=xterm-256color")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	tm("new-session", "-d", "-x", "120", "-y", "40", corralBin)
	t.Cleanup(func() { _ = exec.Command(tmux, "-S", sock, "kill-server").Run() })
	keys = func(k ...string) { tm(append([]string{"send-keys"}, k...)...) }
	await = func(what string, ok func(string) bool) string {
		t.Helper()
		var s string
		if !proctest.WaitFor(15*time.Second, func() bool { s = tm("capture-pane", "-p"); return ok(s) }) {
			t.Fatalf("the terminal never showed %s:\n%s", what, s)
		}
		return s
	}
	running = func() bool {
		out, _ := exec.Command(tmux, "-S", sock, "list-sessions").CombinedOutput()
		return strings.Contains(string(out), "windows")
	}
	return keys, await, running
}

// Enter on another host's pane in the terminal board attaches to it
// through the fleet, as corral attach HOST:ID does: its screen, keys that
// reach the agent, the detach key back to the board. From an observe-only
// host the same attach is read-only.
func fleetTerminalBoardAttach(t *testing.T) {
	proctest.Slow(t, "three daemons and two boards in tmux, about 8 s")
	t.Parallel() // its own daemons and folders; its waits are bounds, not measures
	hub, b := fleetPair(t)
	b.must("run", "--name", "fp", "--agent", "claude-code", "--", corralBin, "fake-agent", "--command", "make test")
	b.must("wait", "fp", "--state", "idle", "--timeout", "10s")
	waitFor(t, 10*time.Second, "b:fp on the hub", func() bool { return hub.inFleet(onHost("b")) })

	keys, await, _ := boardInTmux(t, hub)
	onBoard := func(s string) bool { return strings.Contains(s, "corral  ") && strings.Contains(s, "enter attach") }
	await("b:fp on the board", func(s string) bool { return onBoard(s) && strings.Contains(s, "b:fp") })
	keys("/", "b:fp", "Enter")
	await("b:fp selected", func(s string) bool { return strings.Contains(s, "▸ b:") && strings.Contains(s, "── b:fp") })
	keys("Enter")
	await("b:fp's own screen", func(s string) bool { return !onBoard(s) && strings.Contains(s, "? for shortcuts") })
	keys("ask", "Enter")
	b.must("wait", "fp", "--state", "blocked", "--timeout", "15s")
	await("the prompt", func(s string) bool { return strings.Contains(s, "proceed?") })
	keys("1")
	b.must("wait", "fp", "--state", "done,idle", "--timeout", "15s")
	keys(`C-\`)
	await("the board again, saying detached", func(s string) bool { return onBoard(s) && strings.Contains(s, "detached from b:") })
	if p := b.pane("fp"); p.State == "exited" {
		t.Fatal("detaching ended the pane")
	}

	// An observe-only host sees the pane and cannot type in it.
	out := hub.must("fleet", "invite", "obs", "--observe-only")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	join := strings.Fields(lines[len(lines)-1])
	obs := newEnv(t)
	obs.must(append([]string{"fleet"}, join[2:]...)...)
	keys, await, _ = boardInTmux(t, obs)
	await("b:fp on the observer's board", func(s string) bool { return onBoard(s) && strings.Contains(s, "b:fp") })
	keys("/", "b:fp", "Enter")
	await("b:fp selected", func(s string) bool { return strings.Contains(s, "── b:fp") })
	keys("Enter")
	await("b:fp's screen, read-only", func(s string) bool { return !onBoard(s) && strings.Contains(s, "? for shortcuts") })
	keys("zzz") // the fake agent shows what is typed on its input line
	await("the read-only notice", func(s string) bool { return strings.Contains(s, "[read-only") })
	keys(`C-\`)
	await("the observer's board again", func(s string) bool { return onBoard(s) && strings.Contains(s, "detached from b:") })
	if s := b.must("screen", "fp"); strings.Contains(s, "zzz") {
		t.Fatalf("keys from an observe-only host reached the pane:\n%s", s)
	}
}
