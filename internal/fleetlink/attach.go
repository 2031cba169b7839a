package fleetlink

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/corral-dev/corral/internal/fleet"
	"github.com/corral-dev/corral/internal/httpapi"
)

// Attaching across the fleet: a terminal here joined to another host's
// pane, with the keys and the control messages of a local attach. (Other
// hosts attach to this daemon's panes through Daemon.Attach, which the
// member serves.)

// FleetAttach joins a terminal to another host's pane.
func (l *Link) FleetAttach(ctx context.Context, host, ref string) (httpapi.Session, error) {
	m, err := l.member()
	if err != nil {
		return nil, err
	}
	ra, err := m.Attach(ctx, host, ref)
	if err != nil {
		return nil, fleetError(fmt.Errorf("attach %s:%s: %w", host, ref, err))
	}
	return &remoteSession{ra: ra, ctx: ctx}, nil
}

// remoteSession is a terminal joined to another host's pane.
type remoteSession struct {
	ra  *fleet.RemoteAttach
	ctx context.Context
}

func (r *remoteSession) Initial() []byte       { return r.ra.Initial }
func (r *remoteSession) Output() <-chan []byte { return r.ra.Output() }
func (r *remoteSession) Reason() string        { return r.ra.Reason() }
func (r *remoteSession) Close()                { r.ra.Close() }

func (r *remoteSession) Resize(cols, rows int) error {
	r.ra.Resize(r.ctx, cols, rows)
	return nil
}

func (r *remoteSession) Input(b []byte) error {
	err := r.ra.Input(r.ctx, b)
	if errors.Is(err, fleet.ErrReadOnly) {
		return httpapi.RefuseKeys(err)
	}
	return err
}

// fleetError is a failure to reach another host, with the API's status
// and code.
func fleetError(err error) error {
	status, code := http.StatusBadGateway, "unreachable"
	switch {
	case errors.Is(err, fleet.ErrNoHost):
		code = "not_found"
	case errors.Is(err, fleet.ErrHubUnreachable):
		status, code = http.StatusServiceUnavailable, "hub_unreachable"
	case errors.Is(err, fleet.ErrHostUnreachable):
		code = "host_unreachable"
	case errors.Is(err, fleet.ErrNotPermitted):
		status, code = http.StatusForbidden, "not_permitted"
	}
	return httpapi.Coded(status, code, err)
}
