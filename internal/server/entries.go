package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/roster"
	"github.com/corral-dev/corral/internal/rules"
)

// newToken returns a pane's secret for its hooks.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *Server) paneByNameLocked(name string) *entry {
	id, _ := s.roster.Named(name)
	return s.panes[id]
}

func (s *Server) jobByNameLocked(name string) *job {
	id, _ := s.roster.Named(name)
	return s.jobs[id]
}

// reserve takes an id and the name for a pane or job about to start;
// register, registerJob or unreserve gives them back.
func (s *Server) reserve(name string) (string, *rules.Set, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return "", nil, errors.New("the daemon is shutting down")
	}
	id, err := s.roster.Reserve(name)
	if err != nil {
		return "", nil, err
	}
	s.spawning.Add(1)
	return id, s.rules, nil
}

func (s *Server) unreserve(id string) {
	s.mu.Lock()
	s.roster.Unreserve(id)
	s.mu.Unlock()
	s.spawning.Done()
}

// register adds a started pane under its reserved id. Once the daemon's
// shutdown has taken its list of panes to end, it ends the pane instead.
func (s *Server) register(id string, e *entry) bool {
	return s.admit(id, e.name, func() { s.panes[id] = e }, e.p.Close)
}

// registerJob adds a started job under its reserved id, as register does
// a pane.
func (s *Server) registerJob(j *job) bool {
	return s.admit(j.id, j.name, func() { s.jobs[j.id] = j }, j.Close)
}

// admit gives a reserved id to what add puts in its table, in start
// order, or ends it with end when the shutdown has begun.
func (s *Server) admit(id, name string, add func(), end func(grace time.Duration)) bool {
	defer s.spawning.Done()
	s.mu.Lock()
	if s.collected {
		s.roster.Unreserve(id)
		s.mu.Unlock()
		end(s.opts.KillGrace)
		return false
	}
	add()
	s.roster.Add(id, name)
	s.mu.Unlock()
	return true
}

// found is what a route that serves panes and jobs alike found: a pane's
// entry or a job, exactly one of them.
type found struct {
	pane *entry
	job  *job
}

// id is the pane's or the job's id.
func (f found) id() string {
	if f.job != nil {
		return f.job.id
	}
	return f.pane.p.ID()
}

// json is the pane or the job as the API shows it.
func (f found) json() api.Pane {
	if f.job != nil {
		return f.job.json()
	}
	return paneJSON(f.pane)
}

// done is closed when the pane's program or the job has ended.
func (f found) done() <-chan struct{} {
	if f.job != nil {
		return f.job.Done()
	}
	return f.pane.p.Done()
}

// errNoPane says no pane or job has the id or name ref.
func errNoPane(ref string) error {
	return fmt.Errorf("no pane named %s; see corral ls", ref)
}

// find resolves an id or a name to a pane or a job.
func (s *Server) find(ref string) (found, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.panes[ref]; ok {
		return found{pane: e}, nil
	}
	if j, ok := s.jobs[ref]; ok {
		return found{job: j}, nil
	}
	if e := s.paneByNameLocked(ref); e != nil {
		return found{pane: e}, nil
	}
	if j := s.jobByNameLocked(ref); j != nil {
		return found{job: j}, nil
	}
	return found{}, errNoPane(ref)
}

// findPane resolves an id or a name to a pane; a job is none.
func (s *Server) findPane(ref string) (*entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.panes[ref]; ok {
		return e, nil
	}
	if e := s.paneByNameLocked(ref); e != nil {
		return e, nil
	}
	return nil, errNoPane(ref)
}

// list returns the panes and jobs in start order.
func (s *Server) list() []found {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]found, 0, s.roster.Len())
	for id := range s.roster.All() {
		if j, ok := s.jobs[id]; ok {
			out = append(out, found{job: j})
		} else {
			out = append(out, found{pane: s.panes[id]})
		}
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

// listPanes returns the panes in start order, without the jobs.
func (s *Server) listPanes() []*entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return inStartOrder(s.roster, s.panes)
}

// listJobs returns the jobs in start order.
func (s *Server) listJobs() []*job {
	s.mu.Lock()
	defer s.mu.Unlock()
	return inStartOrder(s.roster, s.jobs)
}

// inStartOrder is table's values in start order (the roster has panes
// and jobs together), skipping the ids of the other kind.
func inStartOrder[T any](r *roster.Roster, table map[string]T) []T {
	out := make([]T, 0, len(table))
	for id := range r.All() {
		if v, ok := table[id]; ok {
			out = append(out, v)
		}
	}
	return out
}

// ErrRunning is returned by remove for a pane whose program runs.
var errStillRunning = errors.New("is still running; end it with corral kill, or remove it with corral rm --force")

// remove forgets an ended pane or job: its name is free again, and what
// it held (screen, events, watchers) goes with it. With force, a
// running one is ended first. A "removed" event says so.
func (s *Server) remove(ref string, force bool) error {
	f, err := s.find(ref)
	if err != nil {
		return err
	}
	select {
	case <-f.done():
	default:
		if !force {
			return fmt.Errorf("pane %s %w", ref, errStillRunning)
		}
		if f.job != nil {
			f.job.Close(s.opts.KillGrace)
		} else {
			f.pane.p.Close(s.opts.KillGrace)
		}
	}
	id := f.id()
	s.mu.Lock()
	if f.job != nil && s.jobs[id] == f.job {
		delete(s.jobs, id)
	} else if f.pane != nil && s.panes[id] == f.pane {
		delete(s.panes, id)
	} else {
		s.mu.Unlock()
		return nil // removed meanwhile
	}
	s.roster.Remove(id)
	s.mu.Unlock()
	s.notify.Forget(id)
	var d combine.Decision
	name, agent := "", ""
	if j := f.job; j != nil {
		s.forgetJob(j)
		d, name, agent = j.Decision(), j.name, j.agent
	} else {
		in := f.pane.p.Info()
		d, name, agent = in.Decision, f.pane.name, in.Agent
	}
	ev := eventlog.Event{Time: time.Now(), Pane: id, Name: name, Agent: agent, State: StateRemoved,
		Previous: string(d.State), PreviousKind: d.Kind}
	s.logEvent(ev)
	return nil
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
	return f.pane.p.Info().ExitedAt
}
