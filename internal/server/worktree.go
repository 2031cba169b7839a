package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/config"
	"github.com/corral-dev/corral/internal/httpapi"
)

// gitTimeout bounds each git command corral runs for a worktree.
const gitTimeout = 10 * time.Second

// worktreeTTL is how long a worktree's branch state is shown before it is
// read again (in the background: listing panes never waits on git).
const worktreeTTL = 2 * time.Second

// worktree is a git worktree corral made for a pane.
type worktree struct {
	path, repo, branch, base string
	newBranch                bool

	mu         sync.Mutex
	st         api.Worktree
	read       time.Time
	refreshing bool
}

// git runs git in dir and returns its trimmed output; errors carry git's
// own words.
func git(dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
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

// worktreeFor makes the worktree a run asked for (nil when it asked for
// none) and points the run's folder into it.
func (s *Server) worktreeFor(req *api.RunRequest) (*worktree, error) {
	if !req.Worktree {
		return nil, nil
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errors.New("--worktree needs git, and it is not on the daemon's PATH")
	}
	dir := req.Cwd
	if dir == "" {
		dir, _ = os.Getwd()
	}
	top, err := git(dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("--worktree needs a git repository, and %s is not in one", dir)
	}
	sub, _ := filepath.Rel(top, dir)
	branch := req.Branch
	if branch == "" {
		suffix := req.Name
		if suffix == "" {
			b := make([]byte, 3)
			_, _ = rand.Read(b)
			suffix = hex.EncodeToString(b)
		}
		branch = "corral/" + suffix
	}
	if _, err := git(top, "check-ref-format", "--branch", branch); err != nil {
		return nil, fmt.Errorf("%q is not a branch name git accepts", branch)
	}
	base, err := git(top, "rev-parse", "--abbrev-ref", "HEAD")
	if err != nil || base == "HEAD" {
		if base, err = git(top, "rev-parse", "--short", "HEAD"); err != nil {
			return nil, fmt.Errorf("the repository %s has no commit to branch from: %v", top, err)
		}
	}
	folder := s.opts.Config.Panes.Worktrees
	if folder == "" {
		folder = "{repo}.worktrees"
	}
	folder = strings.ReplaceAll(folder, "{repo}", filepath.Base(top))
	folder = expandHome(folder)
	if !filepath.IsAbs(folder) {
		folder = filepath.Join(filepath.Dir(top), folder)
	}
	path := filepath.Join(folder, strings.ReplaceAll(branch, "/", "-"))
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("%s already exists; remove it, or pick another branch with --worktree BRANCH", path)
	}
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return nil, fmt.Errorf("worktree folder: %w", err)
	}
	// A folder another user placed (a link to hers, one she can write to)
	// would receive the checkout.
	if err := config.CheckOwnedDir(folder); err != nil {
		return nil, fmt.Errorf("refusing the worktree folder %s: %v; remove it (corral makes it), or set [panes] worktrees in config.toml to a folder of yours", folder, err)
	}
	wt := &worktree{path: path, repo: top, branch: branch, base: base}
	if _, err := git(top, "show-ref", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		if _, err := git(top, "worktree", "add", path, branch); err != nil {
			return nil, fmt.Errorf("cannot make a worktree on branch %s: %v", branch, err)
		}
	} else {
		wt.newBranch = true
		if _, err := git(top, "worktree", "add", "-b", branch, path, "HEAD"); err != nil {
			return nil, fmt.Errorf("cannot make a worktree on a new branch %s: %v", branch, err)
		}
	}
	req.Cwd = path
	if sub != "." && !strings.HasPrefix(sub, "..") {
		if fi, err := os.Stat(filepath.Join(path, sub)); err == nil && fi.IsDir() {
			req.Cwd = filepath.Join(path, sub)
		}
	}
	wt.refresh()
	return wt, nil
}

// undo takes back a worktree whose pane did not start.
func (wt *worktree) undo() {
	if wt == nil {
		return
	}
	_, _ = git(wt.repo, "worktree", "remove", "--force", wt.path)
	if wt.newBranch {
		_, _ = git(wt.repo, "branch", "-D", wt.branch)
	}
}

// refresh reads the worktree's state now.
func (wt *worktree) refresh() api.Worktree {
	st := api.Worktree{Path: wt.path, Repo: wt.repo, Branch: wt.branch, Base: wt.base}
	if out, err := git(wt.path, "status", "--porcelain"); err != nil {
		st.Error = err.Error()
	} else {
		st.Dirty = out != ""
	}
	if cur, err := git(wt.path, "rev-parse", "--abbrev-ref", "HEAD"); err == nil {
		st.Branch = cur
	}
	if out, err := git(wt.path, "rev-list", "--left-right", "--count", wt.base+"...HEAD"); err == nil {
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

// status is the worktree's state as last read; one older than
// worktreeTTL is read again in the background (git can take seconds in a
// big repository, and listing panes never waits on it). Before the first
// read it is what corral made: no changes, ahead or behind known.
func (wt *worktree) status() *api.Worktree {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if time.Since(wt.read) > worktreeTTL && !wt.refreshing {
		wt.refreshing = true
		go wt.refresh()
	}
	st := wt.st
	if wt.read.IsZero() {
		st = api.Worktree{Path: wt.path, Repo: wt.repo, Branch: wt.branch, Base: wt.base}
	}
	return &st
}

// errDirty refuses to remove a worktree that holds work.
var errDirty = errors.New("has uncommitted changes")

// removeWorktree removes the worktree, keeping its branch; git itself
// refuses a worktree with changes.
func (wt *worktree) remove() error {
	if _, err := git(wt.repo, "worktree", "remove", wt.path); err != nil {
		return fmt.Errorf("the worktree %s %w (%v); commit or discard them, then run git worktree remove %s", wt.path, errDirty, err, wt.path)
	}
	return nil
}

// worktreeRemovable refuses a removal with --worktree of a pane without
// one, or whose worktree holds uncommitted work, before the pane itself is
// touched.
func (s *Server) worktreeRemovable(f found) error {
	var wt *worktree
	if f.pane != nil {
		wt = f.pane.Ext.worktree.Load()
	}
	if wt == nil { // a job has none
		return httpapi.Coded(http.StatusBadRequest, "no_worktree", fmt.Errorf("pane %s has no worktree corral made; remove it without --worktree", f.id()))
	}
	st := wt.refresh()
	if st.Error != "" && !st.Dirty {
		if _, err := os.Stat(wt.path); err != nil {
			return nil // already gone: nothing to keep
		}
	}
	if st.Dirty {
		files := "changes"
		if out, err := git(wt.path, "status", "--porcelain"); err == nil {
			if n := len(strings.Split(out, "\n")); n == 1 {
				files = "1 file"
			} else {
				files = fmt.Sprintf("%d files", n)
			}
		}
		return httpapi.Conflict("dirty", fmt.Errorf("the worktree %s %w (%s); commit or discard them, then run corral rm --worktree %s again", wt.path, errDirty, files, f.id()))
	}
	return nil
}

// removeWorktree removes the pane's worktree once the pane is gone; its
// branch stays.
func (s *Server) removeWorktree(e *entry) error {
	wt := e.Ext.worktree.Load()
	if _, err := os.Stat(wt.path); err != nil {
		_, _ = git(wt.repo, "worktree", "prune")
		return nil
	}
	if err := wt.remove(); err != nil {
		return httpapi.Conflict("dirty", fmt.Errorf("pane %s was removed, but %v", e.P.ID(), err))
	}
	return nil
}
