package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/buildinfo"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/fleet"
)

// fleetNode is the daemon's part in a fleet: the hub (if it is one) and
// its member.
type fleetNode struct {
	cfg    fleet.Config
	hub    *fleet.Hub
	member atomic.Pointer[fleet.Member]
	cancel context.CancelFunc
	jobs   sync.Map // fleet job id → *fleetJob
	// maxJobs is the member's job limit (fleet set --max-jobs changes it).
	maxJobs atomic.Int32
	// screens caches other hosts' screens for the boards: HOST:ID →
	// *cachedScreen; it goes with the node.
	screens sync.Map
}

func (s *Server) fleetNode() *fleetNode { return s.fleet.Load() }

// fleetLocal is the daemon as a fleet member sees it.
type fleetLocal struct{ s *Server }

func (l fleetLocal) Handler() http.Handler { return l.s.http.Handler }
func (l fleetLocal) Panes() []api.Pane     { return l.s.listJSON() }

// Pane is the pane or job of that id (not a name).
func (l fleetLocal) Pane(id string) (api.Pane, bool) {
	l.s.mu.Lock()
	e, isPane := l.s.panes[id]
	j, isJob := l.s.jobs[id]
	l.s.mu.Unlock()
	switch {
	case isPane:
		return paneJSON(e), true
	case isJob:
		return j.json(), true
	}
	return api.Pane{}, false
}
func (l fleetLocal) Subscribe(after uint64) (<-chan eventlog.Event, []eventlog.Event, func()) {
	sub, backlog := l.s.hub.Subscribe(after)
	return sub.C, backlog, sub.Close
}

// startFleet starts the fleet the state folder's config describes, if
// any. A member that cannot reach its fleet keeps trying in the
// background.
func (s *Server) startFleet() {
	cfg, err := fleet.LoadConfig(s.opts.StateDir)
	if errors.Is(err, fleet.ErrNotConfigured) {
		return
	}
	if err != nil {
		s.opts.Logf("fleet: %v", err)
		return
	}
	if _, err := s.runFleet(cfg, true); err != nil {
		s.opts.Logf("fleet: %v", err)
	}
}

// runFleet starts a hub (cfg.Hub) and a member. With background, a
// member that cannot connect yet keeps trying; otherwise the error is
// returned and nothing stays started.
func (s *Server) runFleet(cfg fleet.Config, background bool) (*fleetNode, error) {
	return s.runFleetOpts(cfg, background, false)
}

func (s *Server) runFleetOpts(cfg fleet.Config, background, first bool) (*fleetNode, error) {
	n := &fleetNode{cfg: cfg}
	n.maxJobs.Store(int32(cfg.MaxJobs))
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	hostID, err := fleet.LoadHostID(s.opts.StateDir)
	if err != nil {
		cancel()
		return nil, err
	}
	mo := fleet.MemberOptions{Name: cfg.Name, HostID: hostID, URLs: cfg.URLs, Token: cfg.Token, Creds: cfg.Creds, CAFingerprint: cfg.CAFingerprint,
		MaxJobs: cfg.MaxJobs, Version: buildinfo.Self().Version, Local: fleetLocal{s}, Watch: true, Logf: s.opts.Logf, RefuseTaken: first,
		Replicas: cfg.Replicas}
	if cfg.Hub {
		ho := fleet.HubOptions{Dir: fleet.Dir(s.opts.StateDir), Listen: cfg.Listen, TLS: cfg.TLS,
			ServerName: cfg.Name, ForgetAfter: time.Duration(cfg.ForgetAfterMS) * time.Millisecond, Logf: s.opts.Logf}
		if cfg.ClusterListen != "" {
			ho.Cluster = &fleet.ClusterOptions{Listen: cfg.ClusterListen, Routes: cfg.Routes, Replicas: cfg.Replicas}
			// JetStream in a cluster waits for a second hub: the member
			// connects once there is one.
			background = true
		}
		hub, err := fleet.StartHub(ho)
		if err != nil {
			cancel()
			return nil, err
		}
		n.hub = hub
		mo.URLs, mo.Token, mo.Creds, mo.CAFingerprint, mo.Admin = []string{hub.URL()}, hub.AdminToken(), "", hub.Fingerprint(), true
		mo.Enroll, mo.Unenroll, mo.Rights = hub.Enroll, hub.Revoke, hub.HostRights
	}
	var m *fleet.Member
	if n.hub != nil && n.hub.Clustered() {
		// JetStream in a cluster waits for a second hub: the member
		// connects in the background, once there is one.
		err = errors.New("waiting for the cluster's JetStream (it needs two hubs running)")
	} else {
		m, err = fleet.Join(ctx, mo)
	}
	if m != nil && !cfg.Hub {
		// A host that joined with the fleet token keeps its own
		// credential instead.
		n.cfg.Token = m.Token()
	}
	if err != nil && !background {
		cancel()
		if n.hub != nil {
			n.hub.Close()
		}
		return nil, err
	}
	if !s.fleet.CompareAndSwap(nil, n) {
		cancel()
		if m != nil {
			m.Close(false)
		}
		if n.hub != nil {
			n.hub.Close()
		}
		return nil, errors.New("this daemon is in a fleet already; corral fleet leave first")
	}
	if cfg.NotifyFleet {
		go s.notifyFleet(ctx, n)
	}
	if m != nil {
		n.member.Store(m)
		s.opts.Logf("fleet: host %s joined %s", cfg.Name, strings.Join(mo.URLs, ","))
		return n, nil
	}
	s.opts.Logf("fleet: %v; trying again every 2s", err)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
			mo.MaxJobs = int(n.maxJobs.Load())
			m, err := fleet.Join(ctx, mo)
			if err == nil {
				if ctx.Err() != nil {
					m.Close(false)
					return
				}
				n.member.Store(m)
				// fleet set --max-jobs may have come during Join.
				m.SetMaxJobs(int(n.maxJobs.Load()))
				s.opts.Logf("fleet: host %s joined %s", cfg.Name, strings.Join(mo.URLs, ","))
				if tok := m.Token(); tok != cfg.Token {
					s.fleetSetMu.Lock()
					// The config on disk, not cfg: fleet set may have changed it.
					c, err := fleet.LoadConfig(s.opts.StateDir)
					if err == nil {
						c.Token = tok
						err = fleet.SaveConfig(s.opts.StateDir, c)
					}
					s.fleetSetMu.Unlock()
					if err != nil {
						s.opts.Logf("fleet: keep this host's own credential: %v", err)
					}
				}
				return
			}
		}
	}()
	return n, nil
}

// notifyFleet hands other hosts' events to this daemon's notifications,
// each pane named HOST:NAME (HOST:ID when it has no name).
func (s *Server) notifyFleet(ctx context.Context, n *fleetNode) {
	for ctx.Err() == nil {
		m := n.member.Load()
		if m == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		err := m.FollowEvents(ctx, "", time.Time{}, nil, func(ev fleet.Event) error {
			if ev.Host == n.cfg.Name {
				return nil
			}
			e := ev.Event
			e.Pane = ev.Host + ":" + e.Pane
			if e.Name != "" {
				e.Name = ev.Host + ":" + e.Name
			}
			s.notify.Event(e)
			return nil
		})
		if err != nil && ctx.Err() == nil {
			s.opts.Logf("fleet notifications: %v; following again", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// stopFleet leaves the fleet (forget: the host's panes leave its view).
func (s *Server) stopFleet(forget bool) {
	n := s.fleetNode()
	if n == nil {
		return
	}
	s.fleet.CompareAndSwap(n, nil)
	n.cancel()
	if m := n.member.Load(); m != nil {
		m.Close(forget)
	}
	if n.hub != nil {
		n.hub.Close()
	}
}

// localColonRef says whether HOST/v1/panes/REF… names this daemon's own
// pane HOST:REF, and gives the local path for it.
func (s *Server) localColonRef(host, rest string) (string, bool) {
	tail, ok := strings.CutPrefix(rest, "/v1/panes/")
	if !ok {
		return "", false
	}
	tail, query, hasQuery := strings.Cut(tail, "?")
	ref, after, hasAfter := strings.Cut(tail, "/")
	ref, err := url.PathUnescape(ref)
	if err != nil {
		return "", false
	}
	full := host + ":" + ref
	if _, err := s.find(full); err != nil {
		return "", false
	}
	out := "/v1/panes/" + url.PathEscape(full)
	if hasAfter {
		out += "/" + after
	}
	if hasQuery {
		out += "?" + query
	}
	return out, true
}

// hubDownError says since when this host has lost the fleet's hub.
func hubDownError(since time.Time) error {
	return fmt.Errorf("%w (since %s, %v ago); this host keeps trying to reach it; corral fleet status says more",
		fleet.ErrHubUnreachable, since.Format(time.TimeOnly), time.Since(since).Round(time.Second))
}
