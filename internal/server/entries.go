package server

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/rules"
)

// newToken returns a pane's secret for its hooks.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newIDLocked returns a short random pane id, like "k3f9q".
func (s *Server) newIDLocked() string {
	for {
		var b [4]byte
		_, _ = rand.Read(b[:])
		id := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))[:5]
		_, reserved := s.reserved[id]
		if _, taken := s.panes[id]; !taken && !reserved && s.byNameLocked(id) == nil {
			return id
		}
	}
}

func (s *Server) byNameLocked(name string) *entry {
	for _, e := range s.panes {
		if e.name == name {
			return e
		}
	}
	return nil
}

// takenLocked says why a name cannot be given to a new pane ("" when it
// can).
func (s *Server) takenLocked(name string) error {
	if name == "" {
		return nil
	}
	taken := s.byNameLocked(name) != nil
	for _, n := range s.reserved {
		taken = taken || n == name
	}
	if _, ok := s.panes[name]; ok {
		taken = true
	}
	if taken {
		return fmt.Errorf("a pane named %s exists; pick another --name, or remove it with corral rm %s", name, name)
	}
	return nil
}

// reserve takes an id and the name for a pane or job about to start;
// register or unreserve gives them back.
func (s *Server) reserve(name string) (string, *rules.Set, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return "", nil, errors.New("the daemon is shutting down")
	}
	if err := s.takenLocked(name); err != nil {
		return "", nil, err
	}
	id := s.newIDLocked()
	s.reserved[id] = name
	s.spawning.Add(1)
	return id, s.rules, nil
}

func (s *Server) unreserve(id string) {
	s.mu.Lock()
	delete(s.reserved, id)
	s.mu.Unlock()
	s.spawning.Done()
}

// register adds a started unit under its reserved id. Once the daemon's
// shutdown has taken its list of panes to end, it ends the unit instead.
func (s *Server) register(id string, e *entry) bool {
	defer s.spawning.Done()
	s.mu.Lock()
	delete(s.reserved, id)
	if s.collected {
		s.mu.Unlock()
		e.p.Close(s.opts.KillGrace)
		return false
	}
	s.panes[id] = e
	s.order = append(s.order, id)
	s.mu.Unlock()
	return true
}

// find resolves an id or a name.
func (s *Server) find(ref string) (*entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.panes[ref]; ok {
		return e, nil
	}
	if e := s.byNameLocked(ref); e != nil {
		return e, nil
	}
	return nil, fmt.Errorf("no pane named %s; see corral ls", ref)
}

// list returns the panes in start order.
func (s *Server) list() []*entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*entry, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.panes[id])
	}
	return out
}

// ErrRunning is returned by remove for a pane whose program runs.
var errStillRunning = errors.New("is still running; end it with corral kill, or remove it with corral rm --force")

// remove forgets an ended pane or job: its name is free again, and what
// it held (screen, events, watchers) goes with its entry. With force, a
// running one is ended first. A "removed" event says so.
func (s *Server) remove(ref string, force bool) error {
	e, err := s.find(ref)
	if err != nil {
		return err
	}
	select {
	case <-e.p.Done():
	default:
		if !force {
			return fmt.Errorf("pane %s %w", ref, errStillRunning)
		}
		e.p.Close(s.opts.KillGrace)
	}
	id := e.p.ID()
	s.mu.Lock()
	if s.panes[id] != e {
		s.mu.Unlock()
		return nil // removed meanwhile
	}
	delete(s.panes, id)
	for i, o := range s.order {
		if o == id {
			s.order = append(s.order[:i:i], s.order[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	s.notify.Forget(id)
	s.forgetJob(e)
	in := e.p.Info()
	ev := eventlog.Event{Time: time.Now(), Pane: id, Name: e.name, Agent: in.Agent, State: StateRemoved,
		Previous: string(in.Decision.State), PreviousKind: in.Decision.Kind}
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
		for _, e := range s.list() {
			select {
			case <-e.p.Done():
			default:
				continue
			}
			if at := endedAt(e); !at.IsZero() && time.Since(at) >= after {
				_ = s.remove(e.p.ID(), false)
			}
		}
	}
}

// endedAt is when a pane's program or a job ended.
func endedAt(e *entry) time.Time {
	if j, ok := e.asJob(); ok {
		return j.EndedAt()
	}
	return e.p.Info().ExitedAt
}
