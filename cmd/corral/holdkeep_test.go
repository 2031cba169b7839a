package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// A pane's permission policy and its git worktree are the pane's: the
// daemon that adopts it after a kill -9, and a restore after a reboot,
// keep both (ls shows them, and the policy still decides its requests).
func TestAdoptAndRestoreKeepPolicyAndWorktree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	e := newEnv(t)
	repo := filepath.Join(e.dir, "app")
	os.MkdirAll(repo, 0o755)
	gitIn(t, repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644)
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-qm", "first")
	own := filepath.Join(e.dir, "own.toml")
	os.WriteFile(own, []byte("[[rule]]\ntool = \"Write\"\ndecision = \"allow\"\n"), 0o600)
	payload, err := filepath.Abs("../../testdata/hooks/claude-write.json")
	if err != nil {
		t.Fatal(err)
	}
	// The pane asks its hook about a Write each time a file go-N appears,
	// and writes the answer to go-N.out.
	trig := filepath.Join(e.dir, "trig")
	os.MkdirAll(trig, 0o755)
	script := `cd ` + trig + `; while :; do for f in go-*; do case "$f" in *.out|"go-*") continue;; esac; [ -e "$f.out" ] || "` +
		corralBin + `" hook < ` + payload + ` > "$f.out.tmp" 2>&1; mv "$f.out.tmp" "$f.out"; done; sleep 0.05; done # 1027`
	e.must("run", "--name", "pw", "--cwd", repo, "--worktree", "--policy", own, "--", "sh", "-c", script)
	const allow = `"behavior":"allow"`
	ask := func(n string) {
		t.Helper()
		os.WriteFile(filepath.Join(trig, "go-"+n), nil, 0o644)
		out := filepath.Join(trig, "go-"+n+".out")
		waitFor(t, 10*time.Second, "the hook's answer "+n, func() bool { _, err := os.Stat(out); return err == nil })
		if b, _ := os.ReadFile(out); !strings.Contains(string(b), allow) {
			t.Errorf("%s: the policy did not decide the Write: %s", n, b)
		}
	}
	wantPath := filepath.Join(e.dir, "app.worktrees", "corral-pw")
	check := func(when string) {
		t.Helper()
		var ps []struct {
			Name, Cwd, Policy string
			Worktree          *worktreeJSON
		}
		if err := json.Unmarshal([]byte(e.must("ls", "--json")), &ps); err != nil || len(ps) != 1 {
			t.Fatalf("%s: ls: %v %+v", when, err, ps)
		}
		p := ps[0]
		if p.Policy != own || p.Worktree == nil || p.Worktree.Path != wantPath || p.Worktree.Branch != "corral/pw" ||
			p.Worktree.Base != "main" || p.Cwd != wantPath {
			t.Fatalf("%s: %+v (worktree %+v)", when, p, p.Worktree)
		}
	}
	check("started")
	ask("1")

	// kill -9 of the daemon: the next command's daemon adopts the pane.
	daemon := daemonPID(t, e)
	syscall.Kill(daemon, syscall.SIGKILL)
	waitFor(t, 5*time.Second, "the daemon to die", func() bool { return !proctest.Alive(daemon) })
	check("adopted")
	ask("2")

	// A reboot: everything killed, then corral restore.
	syscall.Kill(daemonPID(t, e), syscall.SIGKILL)
	for _, h := range e.holders() {
		syscall.Kill(h, syscall.SIGKILL)
	}
	for _, pid := range withArg("1027") {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	noneLeft(t, "the reboot", "1027")
	var res []struct{ ID, Error string }
	if err := json.Unmarshal([]byte(e.must("restore", "--json")), &res); err != nil || len(res) != 1 || res[0].Error != "" {
		t.Fatalf("restore: %v %+v", err, res)
	}
	check("restored")
	ask("3")
	e.must("shutdown")
	noneLeft(t, "shutdown", "1027")
}
