package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gitIn runs git in dir for a test and returns its output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitRepo makes a repository at dir whose first commit holds file (a
// path inside it), and skips the test where git is missing.
func gitRepo(t *testing.T, dir, file string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	os.MkdirAll(filepath.Dir(filepath.Join(dir, file)), 0o755)
	gitIn(t, dir, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, file), []byte("a\n"), 0o644)
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "-qm", "first")
}

type worktreeJSON struct {
	Path, Repo, Branch, Base string
	Ahead, Behind            int
	Dirty                    bool
	Error                    string
}

func (e *env) worktreeOf(ref string) (cwd string, wt *worktreeJSON) {
	e.t.Helper()
	var ps []struct {
		ID, Name, Cwd string
		Worktree      *worktreeJSON
	}
	e.lookOrRun("/v1/panes", &ps, "ls", "--json")
	for _, p := range ps {
		if p.ID == ref || p.Name == ref {
			return p.Cwd, p.Worktree
		}
	}
	e.t.Fatalf("no pane %s", ref)
	return "", nil
}

// TestRunInWorktree makes real repositories: corral run --worktree puts
// the pane in a new worktree beside the repository (on a new branch, or
// an existing one), ls shows its branch, ahead/behind and dirty state,
// and corral rm --worktree removes it only when clean, keeping its branch.
func TestRunInWorktree(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := filepath.Join(e.dir, "app")
	gitRepo(t, repo, filepath.Join("src", "a.txt"))
	gitIn(t, repo, "branch", "feat")

	// A new branch named after the pane, the pane in the same subfolder.
	e.must("run", "--name", "w1", "--cwd", filepath.Join(repo, "src"), "--worktree", "--", "sleep", "60")
	cwd, wt := e.worktreeOf("w1")
	wantPath := filepath.Join(e.dir, "app.worktrees", "corral-w1")
	if wt == nil || wt.Path != wantPath || wt.Branch != "corral/w1" || wt.Base != "main" || wt.Dirty || wt.Ahead != 0 ||
		cwd != filepath.Join(wantPath, "src") {
		t.Fatalf("w1: cwd %s, worktree %+v", cwd, wt)
	}
	// Work in it: a commit puts it ahead, a new file makes it dirty.
	os.WriteFile(filepath.Join(wantPath, "src", "b.txt"), []byte("b\n"), 0o644)
	gitIn(t, wantPath, "add", ".")
	gitIn(t, wantPath, "commit", "-qm", "second")
	os.WriteFile(filepath.Join(wantPath, "scratch"), []byte("x"), 0o644)
	waitFor(t, 10*time.Second, "w1 ahead and dirty", func() bool {
		_, wt = e.worktreeOf("w1")
		return wt.Ahead == 1 && wt.Behind == 0 && wt.Dirty
	})

	// An existing branch, by --worktree BRANCH and --worktree=BRANCH.
	e.must("run", "--name", "w2", "--cwd", repo, "--worktree", "feat", "--", "sleep", "60")
	if _, wt := e.worktreeOf("w2"); wt == nil || wt.Branch != "feat" || wt.Path != filepath.Join(e.dir, "app.worktrees", "feat") {
		t.Fatalf("w2: %+v", wt)
	}
	if !strings.Contains(gitIn(t, repo, "worktree", "list"), "[feat]") {
		t.Fatalf("no worktree on feat:\n%s", gitIn(t, repo, "worktree", "list"))
	}

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"not a repository", []string{"run", "--cwd", e.dir, "--worktree", "--", "true"}, "needs a git repository"},
		{"branch checked out elsewhere", []string{"run", "--cwd", repo, "--worktree=main", "--", "true"}, "cannot make a worktree on branch main"},
		{"bad branch name", []string{"run", "--cwd", repo, "--worktree=a..b", "--", "true"}, "not a branch name"},
		{"rm of a pane without one", []string{"rm", "--worktree", "nowt"}, "has no worktree"},
		{"rm of a running pane", []string{"rm", "--worktree", "w2"}, "still running"},
		{"rm of a dirty worktree", []string{"rm", "--worktree", "--force", "w1"}, "has uncommitted changes (1 file)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "rm of a pane without one" {
				e.must("run", "--name", "nowt", "--", "true")
			}
			_, errs, code := e.run(c.args...)
			if code == 0 || !strings.Contains(errs, c.want) {
				t.Fatalf("exit %d, stderr %q; want %q", code, errs, c.want)
			}
		})
	}
	// The refused removal left the pane and its work alone.
	if _, wt := e.worktreeOf("w1"); wt == nil {
		t.Fatal("a refused rm removed the pane")
	}
	if _, err := os.Stat(filepath.Join(wantPath, "scratch")); err != nil {
		t.Fatal("a refused rm touched the worktree")
	}

	os.Remove(filepath.Join(wantPath, "scratch"))
	e.must("rm", "--worktree", "--force", "w1", "w2")
	if _, err := os.Stat(wantPath); !os.IsNotExist(err) {
		t.Fatalf("the worktree is still there: %v", err)
	}
	if branches := gitIn(t, repo, "branch", "--list"); !strings.Contains(branches, "corral/w1") || !strings.Contains(branches, "feat") {
		t.Fatalf("a branch went with its worktree:\n%s", branches)
	}
}

// TestWorktreeFolderFromConfig: config.toml's [panes] worktrees names the
// folder beside the repository.
func TestWorktreeFolderFromConfig(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	e := newEnv(t)
	os.MkdirAll(filepath.Join(e.dir, "config", "corral"), 0o700)
	os.WriteFile(filepath.Join(e.dir, "config", "corral", "config.toml"), []byte("[panes]\nworktrees = \"trees/{repo}\"\n"), 0o600)
	repo := filepath.Join(e.dir, "svc")
	os.MkdirAll(repo, 0o755)
	gitIn(t, repo, "init", "-q", "-b", "main")
	gitIn(t, repo, "commit", "-q", "--allow-empty", "-m", "first")
	e.must("run", "--name", "x", "--cwd", repo, "--worktree=topic/one", "--", "sleep", "60")
	if _, wt := e.worktreeOf("x"); wt == nil || wt.Path != filepath.Join(e.dir, "trees", "svc", "topic-one") || wt.Branch != "topic/one" {
		t.Fatalf("worktree %+v", wt)
	}
}

// A PROJECT.worktrees link placed beside the repository (another user's,
// pointing at her folder) is refused: the checkout never lands there.
func TestWorktreeFolderLinkRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := filepath.Join(e.dir, "app")
	gitRepo(t, repo, "a.txt")
	hers := filepath.Join(e.dir, "hers")
	os.MkdirAll(hers, 0o777)
	if err := os.Symlink(hers, filepath.Join(e.dir, "app.worktrees")); err != nil {
		t.Fatal(err)
	}
	_, errs, code := e.run("run", "--name", "w", "--cwd", repo, "--worktree", "feat", "--", "sleep", "60")
	if code == 0 || !strings.Contains(errs, "refusing the worktree folder") {
		t.Fatalf("run --worktree into a linked folder: exit %d: %s", code, errs)
	}
	if entries, _ := os.ReadDir(hers); len(entries) != 0 {
		t.Fatalf("the checkout landed in the linked folder: %v", entries)
	}
	// A folder others can write to, the same.
	os.Remove(filepath.Join(e.dir, "app.worktrees"))
	os.Mkdir(filepath.Join(e.dir, "app.worktrees"), 0o777)
	os.Chmod(filepath.Join(e.dir, "app.worktrees"), 0o777)
	if _, errs, code := e.run("run", "--name", "w", "--cwd", repo, "--worktree", "feat", "--", "sleep", "60"); code == 0 || !strings.Contains(errs, "others can write") {
		t.Fatalf("run --worktree into a folder others can write to: exit %d: %s", code, errs)
	}
}
