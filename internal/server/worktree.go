package server

import (
	"fmt"
	"net/http"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/httpapi"
	"github.com/corral-dev/corral/internal/worktree"
)

// worktreeFor makes the worktree a run asked for (nil when it asked for
// none), in config.toml's [panes] worktrees folder, and points the run's
// folder into it.
func (s *Server) worktreeFor(req *api.RunRequest) (*worktree.Worktree, error) {
	if !req.Worktree {
		return nil, nil
	}
	wt, cwd, err := worktree.Make(worktree.Spec{Dir: req.Cwd, Branch: req.Branch, Name: req.Name,
		Folder: expandHome(s.opts.Config.Panes.Worktrees)})
	if err != nil {
		return nil, err
	}
	req.Cwd = cwd
	return wt, nil
}

// worktreeRemovable refuses a removal with --worktree of a pane without
// one, or whose worktree holds uncommitted work, before the pane itself is
// touched.
func (s *Server) worktreeRemovable(f found) error {
	var wt *worktree.Worktree
	if f.pane != nil {
		wt = f.pane.Ext.worktree.Load()
	}
	if wt == nil { // a job has none
		return httpapi.Coded(http.StatusBadRequest, "no_worktree", fmt.Errorf("pane %s has no worktree corral made; remove it without --worktree", f.id()))
	}
	if err := wt.Removable(); err != nil {
		return httpapi.Conflict("dirty", fmt.Errorf("%w, then run corral rm --worktree %s again", err, f.id()))
	}
	return nil
}

// removeWorktree removes the pane's worktree once the pane is gone; its
// branch stays.
func (s *Server) removeWorktree(e *entry) error {
	if err := e.Ext.worktree.Load().Remove(); err != nil {
		return httpapi.Conflict("dirty", fmt.Errorf("pane %s was removed, but %v", e.P.ID(), err))
	}
	return nil
}
