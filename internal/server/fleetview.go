package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/fleet"
	"github.com/corral-dev/corral/internal/httpapi"
)

// fleetMember is the daemon's fleet member: an error while it is in no
// fleet, or has not reached it yet.
func (s *Server) fleetMember() (*fleet.Member, error) {
	n := s.fleetNode()
	if n == nil {
		return nil, httpapi.Conflict("no_fleet", fleet.ErrNotConfigured)
	}
	m := n.member.Load()
	if m == nil {
		return nil, httpapi.Coded(http.StatusServiceUnavailable, "unreachable", fmt.Errorf("host %s has not reached its fleet yet (it keeps trying; the daemon's log says why)", n.cfg.Name))
	}
	return m, nil
}

// fleetMemberHTTP is fleetMember for a handler: nil once it answered the
// error.
func (s *Server) fleetMemberHTTP(w http.ResponseWriter) *fleet.Member {
	m, err := s.fleetMember()
	if err != nil {
		httpapi.WriteError(w, err)
	}
	return m
}

// FleetStatus says the daemon's fleet and the hosts it sees.
func (s *Server) FleetStatus() (fleet.Status, error) {
	n := s.fleetNode()
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
func (s *Server) FleetPanes(f fleet.PaneFilter) ([]fleet.PaneRecord, error) {
	m, err := s.fleetMember()
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

// handleFleetProxy sends an API request to a host: this one's own API,
// or another's through the fleet, and answers with its answer.
func (s *Server) handleFleetProxy(w http.ResponseWriter, r *http.Request) {
	host, rest := r.PathValue("host"), "/"+r.PathValue("rest")
	if r.URL.RawQuery != "" {
		rest += "?" + r.URL.RawQuery
	}
	if local, ok := s.localColonRef(host, rest); ok {
		// A local pane whose name holds a colon (a tmux pane's
		// SESSION:WINDOW.PANE), not another host's.
		req := r.Clone(r.Context())
		u, _ := url.Parse(local)
		req.URL, req.RequestURI = u, local
		s.http.Handler.ServeHTTP(w, req)
		return
	}
	n := s.fleetNode()
	if n != nil && host == n.cfg.Name {
		req := r.Clone(r.Context())
		u, _ := url.Parse(rest)
		req.URL, req.RequestURI = u, rest
		s.http.Handler.ServeHTTP(w, req)
		return
	}
	m := s.fleetMemberHTTP(w)
	if m == nil {
		return
	}
	if s.fleetAttach(w, r, m, host, rest) {
		return
	}
	// A name is looked up in the fleet's view: the host resolves ids.
	body, err := readBody(w, r)
	if err != nil {
		return
	}
	status, answer, err := m.Request(r.Context(), host, r.Method, rest, body)
	if err != nil {
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
		httpapi.Fail(w, status, code, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	var b bytes.Buffer
	if _, err := b.ReadFrom(http.MaxBytesReader(w, r.Body, httpapi.MaxBody)); err != nil {
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("request body: %v", err))
		return nil, err
	}
	return b.Bytes(), nil
}

// handleFleetEvents streams the fleet's events as NDJSON, each with its
// host: ?host=H only that host's, ?since=RFC3339 from then, else new
// ones; ?follow=1 keeps going (else it stops once idle for a moment).
func (s *Server) handleFleetEvents(w http.ResponseWriter, r *http.Request) {
	m := s.fleetMemberHTTP(w)
	if m == nil {
		return
	}
	if down, since := m.HubDown(); down {
		httpapi.Fail(w, http.StatusServiceUnavailable, "hub_unreachable", hubDownError(since))
		return
	}
	q := r.URL.Query()
	host := q.Get("host")
	if host != "" {
		if err := fleet.CheckName(host); err != nil {
			httpapi.Fail(w, http.StatusBadRequest, "bad_request", err)
			return
		}
	}
	var since time.Time
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			httpapi.Fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("since %q is not RFC 3339", v))
			return
		}
		since = t
	}
	pane := q.Get("pane")
	follow := q.Get("follow") == "1"
	w.Header().Set("Content-Type", "application/x-ndjson")
	rc := http.NewResponseController(w)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	idle := time.AfterFunc(time.Second, func() {
		if !follow {
			cancel()
		}
	})
	defer idle.Stop()
	enc := json.NewEncoder(w)
	// The answer starts once the stream is followed: a caller that reads
	// a state next misses no change in between.
	err := m.FollowEvents(ctx, host, since, func() { _ = rc.Flush() }, func(ev fleet.Event) error {
		idle.Reset(time.Second)
		if pane != "" && ev.Pane != pane && ev.Name != pane {
			return nil
		}
		_ = rc.SetWriteDeadline(time.Now().Add(httpapi.StreamWriteWait))
		if err := enc.Encode(ev); err != nil {
			return err
		}
		return rc.Flush()
	})
	if err != nil && ctx.Err() == nil {
		_ = enc.Encode(api.StreamEnd{End: err.Error()})
	}
}
