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
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		need(t, "tmux (apt-get install tmux)")
	}
	e := newEnv(t)
	e.must("run", "--name", "alpha", "--agent", "claude-code", "--", corralBin, "fake-agent")
	e.must("run", "--name", "beta", "--agent", "claude-code", "--", corralBin, "fake-agent", "--command", "make deploy")
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
	defer exec.Command(tmux, "-S", sock, "kill-server").Run()
	screen := func() string { return tm("capture-pane", "-p") }
	await := func(what string, ok func(string) bool) string {
		t.Helper()
		var s string
		if !proctest.WaitFor(15*time.Second, func() bool { s = screen(); return ok(s) }) {
			t.Fatalf("board never showed %s:\n%s", what, s)
		}
		return s
	}
	await("both panes", func(s string) bool {
		return strings.Contains(s, "2 panes") && strings.Contains(s, "alpha") && strings.Contains(s, "beta")
	})

	e.must("send", "beta", "ask", "--enter")
	s := await("beta blocked first", func(s string) bool { return strings.Contains(s, "1 blocked") })
	lines := strings.Split(s, "\n")
	if !strings.HasPrefix(strings.TrimSpace(lines[1]), "BLOCKED") || !strings.Contains(lines[2], "beta") || !strings.Contains(lines[2], "blocked/permission") {
		t.Fatalf("blocked pane not first:\n%s", s)
	}
	tm("send-keys", "g")
	await("beta selected with its preview", func(s string) bool {
		return strings.Contains(s, "▸ ") && strings.Contains(s, "── beta") && strings.Contains(s, "make deploy")
	})
	tm("send-keys", "y")
	e.must("wait", "beta", "--state", "done,idle", "--timeout", "10s")
	await("no pane blocked", func(s string) bool { return strings.Contains(s, "0 blocked") })
	tm("send-keys", "q")
	if !proctest.WaitFor(10*time.Second, func() bool {
		out, _ := exec.Command(tmux, "-S", sock, "list-sessions").CombinedOutput()
		return !strings.Contains(string(out), "windows")
	}) {
		t.Fatalf("board did not quit:\n%s", screen())
	}
}
