package server

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// A worktree's state is read in the background: a git that does not
// answer (a huge repository, a hung file system) never holds up a
// listing, and its answer shows once it comes.
func TestWorktreeStatusDoesNotWaitOnGit(t *testing.T) {
	bin := t.TempDir()
	release := filepath.Join(bin, "release")
	// git status --porcelain prints a change once released; other
	// commands answer at once.
	script := "#!/bin/sh\ncase \"$*\" in *status*) while [ ! -e " + release + " ]; do sleep 0.01; done; echo ' M a.txt';; esac\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	wt := &worktree{path: t.TempDir(), repo: "/repo", branch: "corral/w1", base: "main"}

	returned := make(chan bool, 1)
	go func() {
		st := wt.status()
		returned <- st.Path == wt.path && st.Branch == "corral/w1" && !st.Dirty
	}()
	select {
	case ok := <-returned:
		if !ok {
			t.Error("the first status is not the worktree as corral made it")
		}
	case <-time.After(gitTimeout / 2):
		t.Fatal("status waited on git")
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if !proctest.WaitFor(10*time.Second, func() bool { return wt.status().Dirty }) {
		t.Errorf("the worktree's change never showed: %+v", wt.status())
	}
}
