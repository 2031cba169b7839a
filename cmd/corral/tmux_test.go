package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/proctest"
)

// tmuxServer is a private tmux server for a test, with no user config.
type tmuxServer struct {
	t    testing.TB
	bin  string
	sock string
	env  []string
}

func newTmux(t testing.TB, e *env) *tmuxServer {
	t.Helper()
	bin, err := exec.LookPath("tmux")
	if err != nil {
		need(t, "tmux (apt-get install tmux)")
	}
	ts := &tmuxServer{t: t, bin: bin, sock: filepath.Join(e.dir, "tmux.sock"),
		env: append(append([]string(nil), e.vars...), "TERM=xterm-256color", "SHELL=/bin/sh")}
	t.Cleanup(func() { exec.Command(bin, "-S", ts.sock, "kill-server").Run() })
	return ts
}

func (ts *tmuxServer) run(args ...string) (string, error) {
	cmd := exec.Command(ts.bin, append([]string{"-S", ts.sock, "-f", "/dev/null"}, args...)...)
	cmd.Env = ts.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (ts *tmuxServer) must(args ...string) string {
	ts.t.Helper()
	out, err := ts.run(args...)
	if err != nil {
		ts.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return out
}

// sizes lists every window's size: a watcher must change none.
func (ts *tmuxServer) sizes() string {
	return ts.must("list-windows", "-a", "-F", "#{session_name}:#{window_index} #{window_width}x#{window_height}")
}

type tmuxPaneJSON struct {
	ID, Name, Agent, State, Kind, Message, Backend string
	ExitCode                                       *int `json:"exit_code"`
	Tmux                                           *struct {
		Socket, Pane, Target string
	}
}

func (e *env) tmuxPanes() []tmuxPaneJSON {
	e.t.Helper()
	var ps []tmuxPaneJSON
	e.lookOrRun("/v1/panes", &ps, "ls", "--json")
	return ps
}

func (e *env) tmuxPane(target string) (tmuxPaneJSON, bool) {
	for _, p := range e.tmuxPanes() {
		if p.Tmux != nil && p.Tmux.Target == target && p.ExitCode == nil {
			return p, true
		}
	}
	return tmuxPaneJSON{}, false
}

// The agents a user already runs in tmux: corral watches the server, every
// pane becomes a corral pane named by its target, a prompt in a tmux pane
// is blocked on corral's side and answered through corral, and the tmux
// pane shows the answer. Panes added and killed while watched, the watch
// kept across a daemon restart, and the user's windows never resized.
func TestTmuxWatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ts := newTmux(t, e)
	// A "fake Claude Code": corral's fake agent under the name claude, so
	// that its process is recognised as the agent's.
	claude := filepath.Join(e.dir, "bin", "claude")
	if err := os.MkdirAll(filepath.Dir(claude), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(corralBin, claude); err != nil {
		t.Fatal(err)
	}
	ask := `printf 'before-watch\n'; printf 'Deploy to prod? [y/N] '; read a; echo "got:$a"; sleep 600`
	ts.must("new-session", "-d", "-s", "work", "-x", "150", "-y", "40", "sh", "-c", ask)
	ts.must("new-window", "-t", "work", claude, "fake-agent")
	before := ts.sizes()

	out := e.must("tmux", "watch", "-S", ts.sock)
	if !strings.Contains(out, "watching tmux") {
		t.Fatalf("tmux watch said %q", out)
	}
	var p tmuxPaneJSON
	waitFor(t, 10*time.Second, "both tmux panes listed", func() bool {
		_, ok0 := e.tmuxPane("work:0.0")
		_, ok1 := e.tmuxPane("work:1.0")
		return ok0 && ok1
	})
	p, _ = e.tmuxPane("work:0.0")
	if p.Backend != "tmux" || p.Name != "work:0.0" || p.Tmux.Socket != ts.sock || !strings.HasPrefix(p.Tmux.Pane, "%") {
		t.Fatalf("tmux pane row %+v", p)
	}
	if scr := e.must("screen", p.ID); !strings.Contains(scr, "before-watch") {
		t.Fatalf("the first screen is not the pane's contents before watching:\n%s", scr)
	}

	// A prompt in a tmux pane, answered through corral by its target name.
	e.must("wait", "work:0.0", "--state", "blocked", "--timeout", "10s")
	if _, _, code := e.run("send", "work:0.0", "oops", "--enter"); code != 3 {
		t.Fatalf("send to a blocked tmux pane: exit %d, want 3", code)
	}
	e.must("answer", "work:0.0", "yes")
	waitFor(t, 10*time.Second, "the tmux pane shows the answer", func() bool {
		return strings.Contains(ts.must("capture-pane", "-p", "-t", "work:0.0"), "got:y")
	})

	// The agent in the second window is recognised from its process.
	waitFor(t, 10*time.Second, "claude-code recognised", func() bool {
		p, _ := e.tmuxPane("work:1.0")
		return p.Agent == "claude-code"
	})
	e.must("send", "work:1.0", "ask", "--enter")
	e.must("wait", "work:1.0", "--state", "blocked", "--timeout", "10s")
	if p, _ := e.tmuxPane("work:1.0"); p.Kind != "permission" {
		t.Fatalf("blocked on %+v, want a permission prompt", p)
	}
	e.must("answer", "work:1.0", "yes")
	e.must("wait", "work:1.0", "--state", "working,idle,done", "--timeout", "10s")

	// A hook of an agent started outside corral names its tmux pane.
	claudePane, _ := e.tmuxPane("work:1.0")
	hook := func(tmuxPane string) string {
		cmd := exec.Command(corralBin, "hook", "--agent", "claude-code", "--outside")
		cmd.Env = append(append([]string(nil), e.vars...), "TMUX="+ts.sock+",1,0", "TMUX_PANE="+tmuxPane)
		cmd.Stdin = strings.NewReader(`{"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "go on"}`)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("corral hook: %v: %s", err, out)
		}
		return string(out)
	}
	hook(claudePane.Tmux.Pane)
	waitFor(t, 5*time.Second, "the hook's report in force", func() bool {
		var ps []struct{ Name, Source string }
		e.lookOrRun("/v1/panes", &ps, "ls", "--json")
		for _, p := range ps {
			if p.Name == "work:1.0" && p.Source == "hook" {
				return true
			}
		}
		return false
	})
	hook("%999") // no such watched pane: refused, counted, silent
	var st struct {
		HooksRefused int `json:"hooks_refused"`
	}
	c := client.New(filepath.Join(e.dir, "s.sock"))
	if err := c.Do(context.Background(), "GET", "/v1/status", nil, &st); err != nil || st.HooksRefused != 1 {
		t.Fatalf("hooks refused %d (%v), want 1", st.HooksRefused, err)
	}

	// Panes added and killed while watched.
	ts.must("split-window", "-t", "work:0", "sh", "-c", "echo split-pane; sleep 600")
	waitFor(t, 10*time.Second, "the new pane listed", func() bool { _, ok := e.tmuxPane("work:0.1"); return ok })
	split, _ := e.tmuxPane("work:0.1")
	ts.must("kill-pane", "-t", split.Tmux.Pane)
	e.must("wait", split.ID, "--state", "exited", "--timeout", "10s")

	// tmux ls.
	var servers []struct {
		Socket   string
		Running  bool
		Sessions int
	}
	if err := json.Unmarshal([]byte(e.must("tmux", "ls", "--json")), &servers); err != nil || len(servers) != 1 || !servers[0].Running || servers[0].Sessions != 1 || servers[0].Socket != ts.sock {
		t.Fatalf("tmux ls: %+v %v", servers, err)
	}

	// A daemon restart: the server is watched again, its panes listed.
	e.must("shutdown")
	waitFor(t, 10*time.Second, "the panes back after a daemon restart", func() bool {
		_, ok := e.tmuxPane("work:1.0")
		return ok
	})
	if after := ts.sizes(); after != before {
		t.Fatalf("window sizes changed:\nbefore %s\nafter  %s", before, after)
	}
	if out := ts.must("capture-pane", "-p", "-t", "work:0.0"); !strings.Contains(out, "got:y") {
		t.Fatalf("the user's pane changed after the restart:\n%s", out)
	}

	// A daemon killed outright leaves tmux as it was: its control clients
	// end with it, the next daemon watches again.
	if err := syscall.Kill(daemonPID(t, e), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "no control client left after kill -9", func() bool {
		return strings.TrimSpace(ts.must("list-clients")) == ""
	})
	if after := ts.sizes(); after != before {
		t.Fatalf("window sizes changed after kill -9:\nbefore %s\nafter  %s", before, after)
	}
	waitFor(t, 10*time.Second, "the panes back after kill -9", func() bool {
		_, ok := e.tmuxPane("work:1.0")
		return ok
	})

	// The tmux server ends: its panes exit; it comes back: watched again.
	ts.must("kill-server")
	waitFor(t, 10*time.Second, "every tmux pane exited", func() bool {
		for _, p := range e.tmuxPanes() {
			if p.Backend == "tmux" && p.ExitCode == nil {
				return false
			}
		}
		return true
	})
	ts.must("new-session", "-d", "-s", "again", "-x", "100", "-y", "30", "sh", "-c", "echo back; sleep 600")
	waitFor(t, 15*time.Second, "the server's new pane listed", func() bool { _, ok := e.tmuxPane("again:0.0"); return ok })

	// Unwatch: the panes leave corral, tmux keeps them, no client stays.
	e.must("tmux", "unwatch", "-S", ts.sock)
	for _, p := range e.tmuxPanes() {
		if p.Backend == "tmux" {
			t.Fatalf("a tmux pane is still listed after unwatch: %+v", p)
		}
	}
	if out := ts.must("list-clients"); strings.TrimSpace(out) != "" {
		t.Fatalf("control clients left after unwatch: %s", out)
	}
	if out := ts.must("list-panes", "-a"); !strings.Contains(out, "again:0.0") {
		t.Fatalf("the user's pane is gone: %s", out)
	}
}

// A flooding tmux pane does not keep another from being answered.
func TestTmuxWatchFlood(t *testing.T) {
	proctest.Slow(t, "a flood until the other pane is answered, about 5 s")
	t.Parallel() // its bounds are 20 s and 120 s: other tests' load does not matter
	e := newEnv(t)
	ts := newTmux(t, e)
	// The flood lasts until the answer is shown, not for a size: the answer
	// cannot come after it, however fast the machine, and no 100 MB are
	// worked through to find that out (the answer takes milliseconds).
	stop := filepath.Join(e.dir, "flood-stop")
	ts.must("new-session", "-d", "-s", "f", "-x", "120", "-y", "30", "sh", "-c",
		"sleep 1; while [ ! -e "+stop+" ]; do head -c 3000000 /dev/urandom | base64; done; echo flood-done; sleep 600")
	ts.must("new-window", "-t", "f", "sh", "-c", `printf 'Continue? [y/N] '; read a; echo "answer:$a"; sleep 600`)
	e.must("tmux", "watch", "-S", ts.sock)
	waitFor(t, 10*time.Second, "the flood under way", func() bool {
		return strings.TrimSpace(ts.must("capture-pane", "-p", "-t", "f:0.0")) != ""
	})
	start := time.Now()
	e.must("wait", "f:1.0", "--state", "blocked", "--timeout", "20s")
	e.must("answer", "f:1.0", "yes")
	waitFor(t, 20*time.Second, "the answer shown while the other pane floods", func() bool {
		return strings.Contains(ts.must("capture-pane", "-p", "-t", "f:1.0"), "answer:y")
	})
	t.Logf("answered in %v while the other pane flooded", time.Since(start))
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The flooding pane is followed to its end (redrawn if tmux paused it).
	flood, ok := e.tmuxPane("f:0.0")
	if !ok {
		t.Fatal("the flooding pane is not listed")
	}
	waitFor(t, 120*time.Second, "the end of the flood on corral's screen", func() bool {
		return strings.Contains(e.screen(flood.ID), "flood-done")
	})
	if out := ts.must("list-windows", "-t", "f", "-F", "#{window_width}x#{window_height}"); strings.TrimSpace(out) != "120x30\n120x30" && strings.Count(out, "120x30") != 2 {
		t.Fatalf("window sizes after the flood: %s", out)
	}
}

// BenchmarkTmuxLs200 lists 200 watched tmux panes with corral ls and ls
// --json (the whole command: a process, a request, the answer printed),
// next to tmux's own list-panes -a in the same run.
func BenchmarkTmuxLs200(b *testing.B) {
	e := newEnv(b)
	ts := newTmux(b, e)
	ts.must("new-session", "-d", "-s", "s0", "-x", "120", "-y", "30", "sh", "-c", "echo ready; sleep 3600")
	for i := 1; i < 200; i++ {
		ts.must("new-window", "-d", "-t", "s0", "sh", "-c", "echo ready; sleep 3600")
	}
	e.must("tmux", "watch", "-S", ts.sock)
	waitFor(b, 60*time.Second, "200 panes listed", func() bool { return len(e.tmuxPanes()) == 200 })
	timeIt := func(name string, run func()) {
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				run()
			}
		})
	}
	timeIt("ls", func() { e.must("ls") })
	timeIt("ls-json", func() { e.must("ls", "--json") })
	timeIt("tmux-list-panes", func() { ts.must("list-panes", "-a") })
}
