package server

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/autoapprove"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/httpapi"
	"github.com/corral-dev/corral/internal/panestore"
	"github.com/corral-dev/corral/internal/worktree"
)

// savedPolicy is the policy as the table keeps it.
func savedPolicy(a *autoapprove.Approver) *panestore.Policy {
	if a == nil {
		return nil
	}
	return &panestore.Policy{Source: a.Source(), Text: string(a.Text())}
}

// savedWorktree is the worktree as the table keeps it.
func savedWorktree(wt *worktree.Worktree) *panestore.Worktree {
	if wt == nil {
		return nil
	}
	return &panestore.Worktree{Path: wt.Path, Repo: wt.Repo, Branch: wt.Branch, Base: wt.Base, NewBranch: wt.NewBranch}
}

// policyOf is the policy a table's pane had (nil: none, or it no
// longer reads, which is logged: its requests are then left to the person).
func (s *Server) policyOf(row panestore.Row) *autoapprove.Approver {
	if row.Policy == nil {
		return nil
	}
	a, err := autoapprove.Parse(row.Policy.Source, []byte(row.Policy.Text), policyEvents{s})
	if err != nil {
		s.opts.Logf("pane %s: its policy no longer reads (%v); its permission requests are left to you", row.ID, err)
		return nil
	}
	return a
}

// worktreeOf is the worktree a table's pane had.
func worktreeOf(row panestore.Row) *worktree.Worktree {
	w := row.Worktree
	if w == nil || w.Path == "" || w.Repo == "" {
		return nil
	}
	wt := &worktree.Worktree{Path: w.Path, Repo: w.Repo, Branch: w.Branch, Base: w.Base, NewBranch: w.NewBranch}
	wt.Refresh()
	return wt
}

// lastLogged returns the newest logged decision of every pane.
func (s *Server) lastLogged() map[string]panestore.Logged {
	evs, _, err := s.log.Since(time.Time{})
	if err != nil {
		s.opts.Logf("%v", err)
	}
	out := map[string]panestore.Logged{}
	for _, ev := range evs {
		out[ev.Pane] = panestore.Logged{D: combine.Decision{State: combine.State(ev.State), Kind: ev.Kind, Message: ev.Message}, At: ev.Time}
	}
	return out
}

// Handover readies the daemon to let go of every pane under a holder
// (without ending its program), write the table and stop (Shutdown, once
// this is answered): the next daemon adopts them.
// Held headless jobs are let go too, for the next daemon; the others end
// with this one.
// With to (a socket of the new daemon's in the state folder), the lock and
// the listening socket are passed on to it rather than let go of.
func (s *Server) Handover(req api.HandoverRequest) (api.HandoverResult, error) {
	if req.To != "" && filepath.Dir(req.To) != filepath.Clean(s.opts.StateDir) {
		return api.HandoverResult{}, httpapi.BadRequest(fmt.Errorf("the hand-over socket %s is not in the state folder %s", req.To, s.opts.StateDir))
	}
	if !s.set.HandOver() {
		return api.HandoverResult{}, httpapi.Conflict("handing_over", errors.New("the daemon is already handing its panes over"))
	}
	passes := false
	if req.To != "" {
		if err := s.prepareHandover(req.To); err != nil {
			s.opts.Logf("hand-over: %v; the socket is let go of instead", err)
		} else {
			passes = true
		}
	}
	return api.HandoverResult{Status: "handing over", Passes: passes}, nil
}
