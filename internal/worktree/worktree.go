// Package worktree is the git worktrees corral makes for panes (corral run
// --worktree): one made on a branch for a run, its state read in the
// background, and its removal. It has no package state.
//
// Locks: Worktree.mu guards the state last read; it is never held while
// git runs, so reading a worktree's state never waits on git.
package worktree

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/config"
)

// GitTimeout bounds each git command corral runs for a worktree.
const GitTimeout = 10 * time.Second

// worktreeTTL is how long a worktree's branch state is shown before it is
// read again (in the background: listing panes never waits on git).
const worktreeTTL = 2 * time.Second

// Worktree is a git worktree corral made for a pane: at Path, of the
// repository Repo, on Branch, made from Base (a branch, or a commit),
// NewBranch when corral made the branch too. Those never change.
type Worktree struct {
	Path, Repo, Branch, Base string
	NewBranch                bool

	mu         sync.Mutex
	st         api.Worktree
	read       time.Time
	refreshing bool
}

// git runs git in dir and returns its trimmed output; errors carry git's
// own words.
func git(dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), GitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return strings.TrimSpace(out.String()), nil
}

// Spec is the worktree a run asks for.
type Spec struct {
	// Dir is the run's folder (empty: the daemon's): the worktree is of
	// its repository, and the run's folder is the same folder in it.
	Dir string
	// Branch is the worktree's branch; empty, corral/NAME (corral/ and six
	// random hex digits without a Name).
	Branch, Name string
	// Folder is where worktrees go, {repo} standing for the repository's
	// folder name, relative to the repository's parent folder (empty:
	// "{repo}.worktrees"); a leading ~ is the caller's to expand.
	Folder string
}

// Make makes the worktree spec asks for, and returns it with the run's
// folder in it.
func Make(spec Spec) (*Worktree, string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, "", errors.New("--worktree needs git, and it is not on the daemon's PATH")
	}
	dir := spec.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	top, err := git(dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, "", fmt.Errorf("--worktree needs a git repository, and %s is not in one", dir)
	}
	sub, _ := filepath.Rel(top, dir)
	branch := spec.Branch
	if branch == "" {
		suffix := spec.Name
		if suffix == "" {
			b := make([]byte, 3)
			_, _ = rand.Read(b)
			suffix = hex.EncodeToString(b)
		}
		branch = "corral/" + suffix
	}
	if _, err := git(top, "check-ref-format", "--branch", branch); err != nil {
		return nil, "", fmt.Errorf("%q is not a branch name git accepts", branch)
	}
	base, err := git(top, "rev-parse", "--abbrev-ref", "HEAD")
	if err != nil || base == "HEAD" {
		if base, err = git(top, "rev-parse", "--short", "HEAD"); err != nil {
			return nil, "", fmt.Errorf("the repository %s has no commit to branch from: %v", top, err)
		}
	}
	folder := spec.Folder
	if folder == "" {
		folder = "{repo}.worktrees"
	}
	folder = strings.ReplaceAll(folder, "{repo}", filepath.Base(top))
	if !filepath.IsAbs(folder) {
		folder = filepath.Join(filepath.Dir(top), folder)
	}
	path := filepath.Join(folder, strings.ReplaceAll(branch, "/", "-"))
	if _, err := os.Lstat(path); err == nil {
		return nil, "", fmt.Errorf("%s already exists; remove it, or pick another branch with --worktree BRANCH", path)
	}
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return nil, "", fmt.Errorf("worktree folder: %w", err)
	}
	// A folder another user placed (a link to hers, one she can write to)
	// would receive the checkout.
	if err := config.CheckOwnedDir(folder); err != nil {
		return nil, "", fmt.Errorf("refusing the worktree folder %s: %v; remove it (corral makes it), or set [panes] worktrees in config.toml to a folder of yours", folder, err)
	}
	wt := &Worktree{Path: path, Repo: top, Branch: branch, Base: base}
	if _, err := git(top, "show-ref", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		if _, err := git(top, "worktree", "add", path, branch); err != nil {
			return nil, "", fmt.Errorf("cannot make a worktree on branch %s: %v", branch, err)
		}
	} else {
		wt.NewBranch = true
		if _, err := git(top, "worktree", "add", "-b", branch, path, "HEAD"); err != nil {
			return nil, "", fmt.Errorf("cannot make a worktree on a new branch %s: %v", branch, err)
		}
	}
	cwd := path
	if sub != "." && !strings.HasPrefix(sub, "..") {
		if fi, err := os.Stat(filepath.Join(path, sub)); err == nil && fi.IsDir() {
			cwd = filepath.Join(path, sub)
		}
	}
	wt.Refresh()
	return wt, cwd, nil
}

// Undo takes back a worktree whose pane did not start.
func (wt *Worktree) Undo() {
	if wt == nil {
		return
	}
	_, _ = git(wt.Repo, "worktree", "remove", "--force", wt.Path)
	if wt.NewBranch {
		_, _ = git(wt.Repo, "branch", "-D", wt.Branch)
	}
}

// Refresh reads the worktree's state now.
func (wt *Worktree) Refresh() api.Worktree {
	st := api.Worktree{Path: wt.Path, Repo: wt.Repo, Branch: wt.Branch, Base: wt.Base}
	if out, err := git(wt.Path, "status", "--porcelain"); err != nil {
		st.Error = err.Error()
	} else {
		st.Dirty = out != ""
	}
	if cur, err := git(wt.Path, "rev-parse", "--abbrev-ref", "HEAD"); err == nil {
		st.Branch = cur
	}
	if out, err := git(wt.Path, "rev-list", "--left-right", "--count", wt.Base+"...HEAD"); err == nil {
		if f := strings.Fields(out); len(f) == 2 {
			st.Behind, _ = strconv.Atoi(f[0])
			st.Ahead, _ = strconv.Atoi(f[1])
		}
	} else if st.Error == "" {
		st.Error = err.Error()
	}
	wt.mu.Lock()
	wt.st, wt.read, wt.refreshing = st, time.Now(), false
	wt.mu.Unlock()
	return st
}

// Status is the worktree's state as last read; one older than
// worktreeTTL is read again in the background (git can take seconds in a
// big repository, and listing panes never waits on it). Before the first
// read it is what corral made: no changes, ahead or behind known.
func (wt *Worktree) Status() *api.Worktree {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if time.Since(wt.read) > worktreeTTL && !wt.refreshing {
		wt.refreshing = true
		go wt.Refresh()
	}
	st := wt.st
	if wt.read.IsZero() {
		st = api.Worktree{Path: wt.Path, Repo: wt.Repo, Branch: wt.Branch, Base: wt.Base}
	}
	return &st
}

// ErrDirty refuses to remove a worktree that holds work.
var ErrDirty = errors.New("has uncommitted changes")

// Removable reads the worktree's state now and says whether it may be
// removed: an error wrapping ErrDirty, saying how many files changed, when
// it holds uncommitted work; nil when it is clean or already gone.
func (wt *Worktree) Removable() error {
	st := wt.Refresh()
	if st.Error != "" && !st.Dirty {
		if _, err := os.Stat(wt.Path); err != nil {
			return nil // already gone: nothing to keep
		}
	}
	if !st.Dirty {
		return nil
	}
	files := "changes"
	if out, err := git(wt.Path, "status", "--porcelain"); err == nil {
		if n := len(strings.Split(out, "\n")); n == 1 {
			files = "1 file"
		} else {
			files = fmt.Sprintf("%d files", n)
		}
	}
	return fmt.Errorf("the worktree %s %w (%s); commit or discard them", wt.Path, ErrDirty, files)
}

// Remove removes the worktree, keeping its branch; git itself refuses a
// worktree with changes. One already gone is pruned from git's list.
func (wt *Worktree) Remove() error {
	if _, err := os.Stat(wt.Path); err != nil {
		_, _ = git(wt.Repo, "worktree", "prune")
		return nil
	}
	if _, err := git(wt.Repo, "worktree", "remove", wt.Path); err != nil {
		return fmt.Errorf("the worktree %s %w (%v); commit or discard them, then run git worktree remove %s", wt.Path, ErrDirty, err, wt.Path)
	}
	return nil
}
