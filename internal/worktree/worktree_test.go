package worktree

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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
	if err := proctest.WriteExecutable(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	wt := &Worktree{Path: t.TempDir(), Repo: "/repo", Branch: "corral/w1", Base: "main"}

	returned := make(chan bool, 1)
	go func() {
		st := wt.Status()
		returned <- st.Path == wt.Path && st.Branch == "corral/w1" && !st.Dirty
	}()
	select {
	case ok := <-returned:
		if !ok {
			t.Error("the first status is not the worktree as corral made it")
		}
	case <-time.After(GitTimeout / 2):
		t.Fatal("status waited on git")
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if !proctest.WaitFor(10*time.Second, func() bool { return wt.Status().Dirty }) {
		t.Errorf("the worktree's change never showed: %+v", wt.Status())
	}
}

// repo makes a git repository with one commit, on branch main, and a
// folder sub in it.
func repo(t *testing.T) string {
	t.Helper()
	top := filepath.Join(t.TempDir(), "proj")
	if err := os.MkdirAll(filepath.Join(top, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(top, "sub", "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first"}, {"branch", "kept"}} {
		if _, err := git(top, args...); err != nil {
			t.Fatal(err)
		}
	}
	return top
}

// Make makes a worktree on a new branch named after the run (or on an
// existing branch), in the folder asked for, with the run's folder the
// same folder in it; it refuses what git refuses, a folder outside a
// repository and a path already taken, saying what to do.
func TestMake(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		spec                 Spec // Dir relative to the repository, Folder relative to its parent
		path, cwd, branch    string
		newBranch            bool
		err                  string
		taken, outsideOfRepo bool
	}{
		{name: "a new branch named after the run", spec: Spec{Dir: "sub", Name: "fix"},
			path: "proj.worktrees/corral-fix", cwd: "proj.worktrees/corral-fix/sub", branch: "corral/fix", newBranch: true},
		{name: "an existing branch", spec: Spec{Branch: "kept", Folder: "trees/{repo}"},
			path: "trees/proj/kept", cwd: "trees/proj/kept", branch: "kept"},
		{name: "a branch git refuses", spec: Spec{Branch: "a..b"}, err: `"a..b" is not a branch name git accepts`},
		{name: "not in a repository", outsideOfRepo: true, err: "--worktree needs a git repository"},
		{name: "a path already there", spec: Spec{Name: "twice"}, taken: true, err: "already exists; remove it, or pick another branch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := repo(t)
			parent := filepath.Dir(top)
			spec := tc.spec
			spec.Dir = filepath.Join(top, spec.Dir)
			if tc.outsideOfRepo {
				spec.Dir = t.TempDir()
			}
			if tc.taken {
				if err := os.MkdirAll(filepath.Join(parent, "proj.worktrees", "corral-twice"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			wt, cwd, err := Make(spec)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(wt.Undo)
			if wt.Path != filepath.Join(parent, tc.path) || cwd != filepath.Join(parent, tc.cwd) || wt.Branch != tc.branch ||
				wt.NewBranch != tc.newBranch || wt.Base != "main" || wt.Repo != top {
				t.Fatalf("made %+v, folder %s", wt, cwd)
			}
			if st := wt.Status(); st.Branch != tc.branch || st.Dirty || st.Error != "" || st.Ahead != 0 || st.Behind != 0 {
				t.Fatalf("status: %+v", st)
			}
		})
	}
}

// A worktree that holds work is not removed and says how much; a clean
// one is removed and its branch kept; one already gone is let go; Undo
// takes back a worktree and the branch corral made for it.
func TestRemove(t *testing.T) {
	top := repo(t)
	wt, _, err := Make(Spec{Dir: top, Name: "w"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"b.txt", "c.txt"} {
		if err := os.WriteFile(filepath.Join(wt.Path, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := wt.Removable(); !errors.Is(err, ErrDirty) || !strings.Contains(err.Error(), "(2 files)") {
		t.Fatalf("a worktree with two new files: %v", err)
	}
	if err := wt.Remove(); !errors.Is(err, ErrDirty) {
		t.Fatalf("removing a worktree with work: %v", err)
	}
	for _, f := range []string{"b.txt", "c.txt"} {
		if err := os.Remove(filepath.Join(wt.Path, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := wt.Removable(); err != nil {
		t.Fatalf("a clean worktree: %v", err)
	}
	if err := wt.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wt.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the removed worktree: %v", err)
	}
	if _, err := git(top, "show-ref", "--verify", "--quiet", "refs/heads/corral/w"); err != nil {
		t.Fatalf("the branch went with the worktree: %v", err)
	}
	if err := wt.Removable(); err != nil {
		t.Fatalf("a worktree already gone: %v", err)
	}
	if err := wt.Remove(); err != nil {
		t.Fatalf("removing a worktree already gone: %v", err)
	}

	undone, _, err := Make(Spec{Dir: top, Name: "u"})
	if err != nil {
		t.Fatal(err)
	}
	undone.Undo()
	if _, err := os.Stat(undone.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the undone worktree: %v", err)
	}
	if _, err := git(top, "show-ref", "--verify", "--quiet", "refs/heads/corral/u"); err == nil {
		t.Fatal("the branch made for an undone worktree stays")
	}
}
