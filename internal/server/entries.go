package server

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/autoapprove"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/jobs"
	"github.com/corral-dev/corral/internal/osproc"
	"github.com/corral-dev/corral/internal/paneset"
	"github.com/corral-dev/corral/internal/panestore"
	"github.com/corral-dev/corral/internal/worktree"
)

// holderExe is the binary a holder runs: this daemon's own, even when the
// file was replaced since (an upgrade).
var holderExe = osproc.SelfExe()

// paneSet is the daemon's panes (internal/paneset), with its jobs beside
// them; entry is one pane there.
type (
	paneSet = paneset.Set[paneExt, *jobs.Job]
	entry   = paneset.Entry[paneExt]
)

// paneExt is what the server keeps beside a pane.
type paneExt struct {
	// approve decides the pane's permission requests (nil: none does);
	// worktree is the git worktree corral made for it.
	approve  atomic.Pointer[autoapprove.Approver]
	worktree atomic.Pointer[worktree.Worktree]
	// question holds the choices of the question the agent's hook last
	// asked, until the agent goes on.
	question atomic.Pointer[[]string]
}

// newSet makes the daemon's pane set, over the pane table in the state
// folder.
func (s *Server) newSet() *paneSet {
	return paneset.New(paneset.Options[paneExt, *jobs.Job]{StateDir: s.opts.StateDir, Socket: s.opts.Socket, HolderExe: holderExe,
		Logf: s.opts.Logf, KillGrace: s.opts.KillGrace, Rules: s.currentRules, Record: s.record, Removed: s.removed,
		FromRow: s.fromRow, Saved: savedExt})
}

// fromRow reads a table's pane's policy and worktree, for its entry.
func (s *Server) fromRow(row panestore.Row) func(*entry) {
	approve, wt := s.policyOf(row), worktreeOf(row)
	return func(e *entry) {
		e.Ext.approve.Store(approve)
		e.Ext.worktree.Store(wt)
		holdForPolicy(e.P, approve)
	}
}

// savedExt is what the table keeps of a pane's policy and worktree.
func savedExt(e *entry) (*panestore.Policy, *panestore.Worktree) {
	return savedPolicy(e.Ext.approve.Load()), savedWorktree(e.Ext.worktree.Load())
}

// found is what a route that serves panes and jobs alike found: a pane's
// entry or a job, exactly one of them.
type found struct {
	pane *entry
	job  *jobs.Job
}

func foundOf(u paneset.Unit[paneExt, *jobs.Job]) found { return found{pane: u.Pane, job: u.Job} }

// id is the pane's or the job's id.
func (f found) id() string {
	if f.job != nil {
		return f.job.ID()
	}
	return f.pane.P.ID()
}

// json is the pane or the job as the API shows it.
func (f found) json() api.Pane {
	if f.job != nil {
		return f.job.JSON()
	}
	return paneJSON(f.pane)
}

// done is closed when the pane's program or the job has ended.
func (f found) done() <-chan struct{} {
	if f.job != nil {
		return f.job.Done()
	}
	return f.pane.P.Done()
}

// find resolves an id or a name to a pane or a job.
func (s *Server) find(ref string) (found, error) {
	u, err := s.set.Find(ref)
	return foundOf(u), err
}

// findPane resolves an id or a name to a pane; a job is none.
func (s *Server) findPane(ref string) (*entry, error) { return s.set.FindPane(ref) }

// list returns the panes and jobs in start order.
func (s *Server) list() []found {
	us := s.set.List()
	out := make([]found, len(us))
	for i, u := range us {
		out[i] = foundOf(u)
	}
	return out
}

// listJSON is the panes and jobs as the API lists them, in start order.
func (s *Server) listJSON() []api.Pane {
	out := []api.Pane{}
	for _, f := range s.list() {
		out = append(out, f.json())
	}
	return out
}

// remove forgets an ended pane or job (force: ends it first); removed
// says so.
func (s *Server) remove(ref string, force bool) error { return s.set.Remove(ref, force) }

// removed is told of a pane or job that left the set: what it held goes
// with it, and a "removed" event says so.
func (s *Server) removed(id string, e *entry, j *jobs.Job) {
	s.notify.Forget(id)
	var d combine.Decision
	name, agent := "", ""
	if j != nil {
		s.forgetJob(j)
		d, name, agent = j.Decision(), j.Name(), j.Agent()
	} else {
		in := e.P.Info()
		d, name, agent = in.Decision, e.Name, in.Agent
	}
	ev := eventlog.Event{Time: time.Now(), Pane: id, Name: name, Agent: agent, State: StateRemoved,
		Previous: string(d.State), PreviousKind: d.Kind}
	s.logEvent(ev)
}

// StateRemoved is the state of the event that says a pane or job was
// removed; no pane is ever in it.
const StateRemoved = "removed"

// pruneLoop removes panes and jobs ended longer ago than the config's
// [panes] prune_after.
func (s *Server) pruneLoop(ctx context.Context) {
	after := s.opts.Config.Panes.PruneAfter.D()
	if after <= 0 {
		return
	}
	every := min(max(after/4, 10*time.Millisecond), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, f := range s.list() {
			select {
			case <-f.done():
			default:
				continue
			}
			if at := endedAt(f); !at.IsZero() && time.Since(at) >= after {
				_ = s.remove(f.id(), false)
			}
		}
	}
}

// endedAt is when a pane's program or a job ended.
func endedAt(f found) time.Time {
	if f.job != nil {
		return f.job.EndedAt()
	}
	return f.pane.P.Info().ExitedAt
}
