package fleetlink

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/corral-dev/corral/internal/fleet"
	"github.com/corral-dev/corral/internal/httpapi"
)

// member is the daemon's fleet member: an error while it is in no
// fleet, or has not reached it yet.
func (l *Link) member() (*fleet.Member, error) {
	_, m, err := l.nodeMember()
	return m, err
}

// nodeMember is the fleet node and its member from one reading: the node
// can go (fleet leave) between two.
func (l *Link) nodeMember() (*node, *fleet.Member, error) {
	n := l.node.Load()
	if n == nil {
		return nil, nil, httpapi.Conflict("no_fleet", fleet.ErrNotConfigured)
	}
	m := n.member.Load()
	if m == nil {
		return nil, nil, httpapi.Coded(http.StatusServiceUnavailable, "unreachable", fmt.Errorf("host %s has not reached its fleet yet (it keeps trying; the daemon's log says why)", n.cfg.Name))
	}
	return n, m, nil
}

// FleetStatus says the daemon's fleet and the hosts it sees.
func (l *Link) FleetStatus() (fleet.Status, error) {
	n := l.node.Load()
	if n == nil {
		return fleet.Status{}, httpapi.Conflict("no_fleet", fleet.ErrNotConfigured)
	}
	out := fleet.Status{Name: n.cfg.Name, Hub: n.hub != nil, Hosts: []fleet.HostStatus{}}
	if n.hub != nil {
		out.URL = n.hub.URL()
		out.Refused, out.Why = n.hub.Refused()
	}
	if m := n.member.Load(); m != nil {
		out.Joined = true
		out.Hosts = m.Hosts()
		st := m.Stats()
		out.Member = &st
		if n.hub != nil && n.hub.Clustered() {
			out.Replicas = m.ReplicasNow()
		}
	}
	return out, nil
}

// FleetPanes is every host's panes that f keeps.
func (l *Link) FleetPanes(f fleet.PaneFilter) ([]fleet.PaneRecord, error) {
	m, err := l.member()
	if err != nil {
		return nil, err
	}
	out := []fleet.PaneRecord{}
	for _, p := range m.Panes() {
		if f.Keep(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// LocalPath says whether host's path rest is this daemon's own API: its
// own host's name, or a local pane whose name holds a colon (a tmux
// pane's SESSION:WINDOW.PANE), not another host's.
func (l *Link) LocalPath(host, rest string) (string, bool) {
	if local, ok := l.localColonRef(host, rest); ok {
		return local, true
	}
	if n := l.node.Load(); n != nil && host == n.cfg.Name {
		return rest, true
	}
	return "", false
}

// FleetRequest sends an API request to another host; a name is looked up
// in the fleet's view, the host resolves ids.
func (l *Link) FleetRequest(ctx context.Context, host, method, path string, body []byte) (int, []byte, error) {
	m, err := l.member()
	if err != nil {
		return 0, nil, err
	}
	status, answer, err := m.Request(ctx, host, method, path, body)
	if err != nil {
		return 0, nil, fleetError(err)
	}
	return status, answer, nil
}

// FleetEvents follows the fleet's events, each with its host.
func (l *Link) FleetEvents(ctx context.Context, host string, since time.Time, ready func(), each func(fleet.Event) error) error {
	m, err := l.member()
	if err != nil {
		return err
	}
	if down, at := m.HubDown(); down {
		return httpapi.Coded(http.StatusServiceUnavailable, "hub_unreachable", hubDownError(at))
	}
	return m.FollowEvents(ctx, host, since, ready, each)
}
