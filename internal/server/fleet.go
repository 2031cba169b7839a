package server

import (
	"errors"
	"net/http"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/fleetlink"
	"github.com/corral-dev/corral/internal/httpapi"
)

// fleetLocal is the daemon as its fleet bridge (s.fleet) sees it.
type fleetLocal struct{ s *Server }

var _ fleetlink.Daemon = fleetLocal{}

func (l fleetLocal) Handler() http.Handler   { return l.s.http.Handler }
func (l fleetLocal) Panes() []api.Pane       { return l.s.listJSON() }
func (l fleetLocal) Exists(ref string) error { return l.s.Exists(ref) }
func (l fleetLocal) Notify(e eventlog.Event) { l.s.notify.Event(e) }

// Pane is the pane or job of that id (not a name).
func (l fleetLocal) Pane(id string) (api.Pane, bool) {
	u, ok := l.s.set.Get(id)
	if !ok {
		return api.Pane{}, false
	}
	return foundOf(u).json(), true
}

func (l fleetLocal) Subscribe(after uint64) (<-chan eventlog.Event, []eventlog.Event, func()) {
	sub, backlog := l.s.hub.Subscribe(after)
	return sub.C, backlog, sub.Close
}

// Attach joins another host's terminal to one of this daemon's panes.
func (l fleetLocal) Attach(ref string) (httpapi.Session, error) {
	f, err := l.s.find(ref)
	if err != nil {
		return nil, err
	}
	if f.job != nil {
		return nil, errors.New("a headless job has no terminal to attach to; follow it with corral events HOST:ID --follow")
	}
	return l.s.Attach(ref)
}
