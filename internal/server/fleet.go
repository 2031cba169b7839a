package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
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
func (l fleetLocal) Panes() []api.Pane {
	out := []api.Pane{}
	for _, e := range l.s.list() {
		out = append(out, paneJSON(e))
	}
	return out
}
func (l fleetLocal) Pane(id string) (api.Pane, bool) {
	l.s.mu.Lock()
	e, ok := l.s.panes[id]
	l.s.mu.Unlock()
	if !ok {
		return api.Pane{}, false
	}
	return paneJSON(e), true
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

func (s *Server) fleetRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/fleet/init", s.handleFleetInit)
	mux.HandleFunc("POST /v1/fleet/join", s.handleFleetJoin)
	mux.HandleFunc("POST /v1/fleet/join-hub", s.handleFleetJoinHub)
	mux.HandleFunc("POST /v1/fleet/leave", s.handleFleetLeave)
	mux.HandleFunc("POST /v1/fleet/invite", s.handleFleetInvite)
	mux.HandleFunc("POST /v1/fleet/forget", s.handleFleetForget)
	mux.HandleFunc("POST /v1/fleet/set", s.handleFleetSet)
	mux.HandleFunc("GET /v1/fleet/status", s.handleFleetStatus)
	mux.HandleFunc("GET /v1/fleet/panes", s.handleFleetPanes)
	mux.HandleFunc("GET /v1/fleet/events", s.handleFleetEvents)
	mux.HandleFunc("POST /v1/fleet/jobs", s.handleFleetExec)
	s.jobRoutes(mux)
	mux.HandleFunc("GET /v1/fleet/jobs/{id}/stream", s.handleFleetJobStream)
	mux.HandleFunc("POST /v1/fleet/jobs/{id}/kill", s.handleFleetJobKill)
	mux.HandleFunc("/v1/fleet/hosts/{host}/{rest...}", s.handleFleetProxy)
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

func joinInfo(n *fleetNode, name, token string, others ...string) fleet.JoinInfo {
	hub := n.hub
	u := hub.URL()
	// Every hub of a cluster this one has heard of.
	urls := []string{u}
	seen := map[string]bool{hostPort(u): true}
	known := others
	if m := n.member.Load(); m != nil {
		known = append(known, m.ServerURLs()...)
	}
	for _, o := range known {
		if !seen[hostPort(o)] {
			seen[hostPort(o)] = true
			urls = append(urls, o)
		}
	}
	all := strings.Join(urls, ",")
	fp := ""
	if f := hub.Fingerprint(); f != "" {
		fp = " --ca-fingerprint " + f
	}
	info := fleet.JoinInfo{Name: name, URL: all, Token: token, Fingerprint: hub.Fingerprint(), Join: fmt.Sprintf("corral fleet join %s --token %s%s", all, token, fp)}
	if hub.Clustered() {
		info.JoinHub = fmt.Sprintf("corral fleet join-hub %s --hub-token %s%s --cluster-listen HOST:PORT", all, hub.HubToken(), fp)
	}
	return info
}

func (s *Server) handleFleetInit(w http.ResponseWriter, r *http.Request) {
	var req fleet.InitRequest
	if !decode(w, r, &req) {
		return
	}
	if s.fleetNode() != nil {
		fail(w, http.StatusConflict, "in_fleet", errors.New("this daemon is in a fleet already; corral fleet status shows it, corral fleet leave leaves it"))
		return
	}
	if req.Name == "" {
		req.Name = fleet.DefaultName()
	}
	if err := fleet.CheckName(req.Name); err != nil {
		fail(w, http.StatusBadRequest, "bad_request", err)
		return
	}
	if req.Listen == "" {
		req.Listen = fleet.DefaultListen
	}
	if req.ForgetAfterMS < 0 {
		fail(w, http.StatusBadRequest, "bad_request", errors.New("--forget-after must not be negative (0: never)"))
		return
	}
	cfg := fleet.Config{Name: req.Name, Hub: true, Listen: req.Listen, TLS: req.TLS || !fleet.IsLoopback(req.Listen), MaxJobs: req.MaxJobs,
		NotifyFleet: req.NotifyFleet, ForgetAfterMS: req.ForgetAfterMS, ClusterListen: req.ClusterListen}
	if cfg.ClusterListen != "" {
		cfg.Replicas = 1
	}
	n, err := s.runFleet(cfg, false)
	if err != nil {
		fail(w, http.StatusBadRequest, "bad_request", err)
		return
	}
	// A port chosen by the system is kept for the next start.
	n.cfg.Listen = n.hub.Addr()
	if err := fleet.SaveConfig(s.opts.StateDir, n.cfg); err != nil {
		s.stopFleet(true)
		fail(w, http.StatusInternalServerError, "internal", err)
		return
	}
	reply(w, joinInfo(n, req.Name, n.hub.FleetToken()))
}

func (s *Server) handleFleetJoinHub(w http.ResponseWriter, r *http.Request) {
	var req fleet.JoinHubRequest
	if !decode(w, r, &req) {
		return
	}
	if s.fleetNode() != nil {
		fail(w, http.StatusConflict, "in_fleet", errors.New("this daemon is in a fleet already; corral fleet leave first"))
		return
	}
	if req.Name == "" {
		req.Name = fleet.DefaultName()
	}
	if err := fleet.CheckName(req.Name); err != nil {
		fail(w, http.StatusBadRequest, "bad_request", err)
		return
	}
	if req.ClusterListen == "" || len(req.URLs) == 0 || req.HubToken == "" {
		fail(w, http.StatusBadRequest, "bad_request", errors.New("need the hubs' URLs, --hub-token and --cluster-listen HOST:PORT (the join-hub command a hub printed carries the first two)"))
		return
	}
	if req.Listen == "" {
		req.Listen = fleet.DefaultListen
	}
	b, err := fleet.FetchHubBundle(r.Context(), req.URLs, req.HubToken, req.CAFingerprint)
	if err != nil {
		fail(w, http.StatusBadRequest, "refused", err)
		return
	}
	if err := fleet.InstallHubBundle(fleet.Dir(s.opts.StateDir), b); err != nil {
		fail(w, http.StatusInternalServerError, "internal", err)
		return
	}
	cfg := fleet.Config{Name: req.Name, Hub: true, Listen: req.Listen, TLS: b.TLS || !fleet.IsLoopback(req.Listen), MaxJobs: req.MaxJobs,
		NotifyFleet: req.NotifyFleet, ClusterListen: req.ClusterListen, Routes: b.Routes, Replicas: min(b.Nodes+1, fleet.MaxReplicas)}
	n, err := s.runFleet(cfg, false)
	if err != nil {
		fail(w, http.StatusBadRequest, "bad_request", err)
		return
	}
	n.cfg.Listen = n.hub.Addr()
	if err := fleet.SaveConfig(s.opts.StateDir, n.cfg); err != nil {
		s.stopFleet(true)
		fail(w, http.StatusInternalServerError, "internal", err)
		return
	}
	reply(w, joinInfo(n, req.Name, n.hub.FleetToken(), req.URLs...))
}

func hostPort(u string) string {
	if p, err := url.Parse(u); err == nil && p.Host != "" {
		return p.Host
	}
	return u
}

func (s *Server) handleFleetJoin(w http.ResponseWriter, r *http.Request) {
	var req fleet.JoinRequest
	if !decode(w, r, &req) {
		return
	}
	if s.fleetNode() != nil {
		fail(w, http.StatusConflict, "in_fleet", errors.New("this daemon is in a fleet already; corral fleet leave first"))
		return
	}
	if req.Name == "" {
		req.Name = fleet.DefaultName()
	}
	if err := fleet.CheckName(req.Name); err != nil {
		fail(w, http.StatusBadRequest, "bad_request", err)
		return
	}
	cfg := fleet.Config{Name: req.Name, URLs: req.URLs, Token: req.Token, Creds: req.Creds, CAFingerprint: req.CAFingerprint, MaxJobs: req.MaxJobs,
		NotifyFleet: req.NotifyFleet}
	n, err := s.runFleetOpts(cfg, false, true)
	if err != nil {
		fail(w, http.StatusBadRequest, "refused", err)
		return
	}
	if err := fleet.SaveConfig(s.opts.StateDir, n.cfg); err != nil {
		s.stopFleet(true)
		fail(w, http.StatusInternalServerError, "internal", err)
		return
	}
	reply(w, map[string]any{"name": req.Name, "urls": req.URLs})
}

func (s *Server) handleFleetLeave(w http.ResponseWriter, r *http.Request) {
	n := s.fleetNode()
	if n == nil {
		fail(w, http.StatusConflict, "no_fleet", fleet.ErrNotConfigured)
		return
	}
	s.stopFleet(true)
	if err := fleet.RemoveConfig(s.opts.StateDir); err != nil {
		fail(w, http.StatusInternalServerError, "internal", err)
		return
	}
	reply(w, map[string]any{"left": n.cfg.Name, "was_hub": n.cfg.Hub})
}

func (s *Server) handleFleetInvite(w http.ResponseWriter, r *http.Request) {
	var req fleet.InviteRequest
	if !decode(w, r, &req) {
		return
	}
	n := s.fleetNode()
	if n == nil || n.hub == nil {
		fail(w, http.StatusConflict, "not_hub", errors.New("credentials are made on the fleet's hub (the machine that ran corral fleet init)"))
		return
	}
	if req.Revoke {
		if err := n.hub.Revoke(req.Name); err != nil {
			fail(w, http.StatusBadRequest, "bad_request", err)
			return
		}
		reply(w, map[string]any{"revoked": req.Name})
		return
	}
	if req.TakeJobs && !req.ObserveOnly {
		fail(w, http.StatusBadRequest, "bad_request", errors.New("--take-jobs is for an observe-only credential (one with control takes jobs anyway)"))
		return
	}
	tok, err := n.hub.InviteRights(req.Name, fleet.Rights{Control: !req.ObserveOnly, Jobs: !req.ObserveOnly || req.TakeJobs},
		time.Duration(req.ExpiresMS)*time.Millisecond)
	if err != nil {
		fail(w, http.StatusBadRequest, "bad_request", err)
		return
	}
	info := joinInfo(n, req.Name, tok)
	info.Join += " --name " + req.Name
	reply(w, info)
}

func (s *Server) handleFleetForget(w http.ResponseWriter, r *http.Request) {
	var req fleet.ForgetRequest
	if !decode(w, r, &req) {
		return
	}
	n := s.fleetNode()
	if n == nil || n.hub == nil {
		fail(w, http.StatusConflict, "not_hub", errors.New("hosts are forgotten on the fleet's hub (the machine that ran corral fleet init)"))
		return
	}
	if err := n.hub.Forget(req.Host); err != nil {
		fail(w, http.StatusConflict, "refused", err)
		return
	}
	reply(w, map[string]any{"forgotten": req.Host})
}

func (s *Server) handleFleetSet(w http.ResponseWriter, r *http.Request) {
	var req fleet.SetRequest
	if !decode(w, r, &req) {
		return
	}
	n := s.fleetNode()
	switch {
	case n == nil:
		fail(w, http.StatusConflict, "not_in_fleet", errors.New("this daemon is in no fleet (corral fleet init or corral fleet join)"))
		return
	case req.ForgetAfterMS == nil && req.MaxJobs == nil:
		fail(w, http.StatusBadRequest, "bad_request", errors.New("nothing to set: give forget_after_ms or max_jobs"))
		return
	case req.ForgetAfterMS != nil && n.hub == nil:
		fail(w, http.StatusConflict, "not_hub", errors.New("the fleet's settings are set on its hub (the machine that ran corral fleet init)"))
		return
	case req.ForgetAfterMS != nil && *req.ForgetAfterMS < 0:
		fail(w, http.StatusBadRequest, "bad_request", errors.New("--forget-after must not be negative (0: never)"))
		return
	case req.MaxJobs != nil && (*req.MaxJobs < 0 || *req.MaxJobs > math.MaxInt32):
		fail(w, http.StatusBadRequest, "bad_request", errors.New("--max-jobs must be 0 (take no jobs) or more"))
		return
	}
	s.fleetSetMu.Lock()
	defer s.fleetSetMu.Unlock()
	cfg, err := fleet.LoadConfig(s.opts.StateDir)
	if err != nil {
		fail(w, http.StatusInternalServerError, "internal", err)
		return
	}
	if req.ForgetAfterMS != nil {
		cfg.ForgetAfterMS = *req.ForgetAfterMS
	}
	if req.MaxJobs != nil {
		cfg.MaxJobs = *req.MaxJobs
	}
	if err := fleet.SaveConfig(s.opts.StateDir, cfg); err != nil {
		fail(w, http.StatusInternalServerError, "internal", err)
		return
	}
	if req.ForgetAfterMS != nil {
		n.hub.SetForgetAfter(time.Duration(cfg.ForgetAfterMS) * time.Millisecond)
	}
	if req.MaxJobs != nil {
		// A member still connecting joins with it; one connected takes
		// it at once.
		n.maxJobs.Store(int32(cfg.MaxJobs))
		if m := n.member.Load(); m != nil {
			m.SetMaxJobs(cfg.MaxJobs)
			if r, ok := m.Rights(); ok && !r.Jobs && cfg.MaxJobs > 0 {
				reply(w, map[string]any{"max_jobs": cfg.MaxJobs, "note": fmt.Sprintf(
					"this host's credential is observe-only: it takes no jobs until the hub runs corral fleet invite %s --observe-only --take-jobs (and this host joins with it)", cfg.Name)})
				return
			}
		}
	}
	reply(w, req)
}

func (s *Server) fleetMember(w http.ResponseWriter) *fleet.Member {
	n := s.fleetNode()
	if n == nil {
		fail(w, http.StatusConflict, "no_fleet", fleet.ErrNotConfigured)
		return nil
	}
	m := n.member.Load()
	if m == nil {
		fail(w, http.StatusServiceUnavailable, "unreachable", fmt.Errorf("host %s has not reached its fleet yet (it keeps trying; the daemon's log says why)", n.cfg.Name))
		return nil
	}
	return m
}

func (s *Server) handleFleetStatus(w http.ResponseWriter, r *http.Request) {
	n := s.fleetNode()
	if n == nil {
		fail(w, http.StatusConflict, "no_fleet", fleet.ErrNotConfigured)
		return
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
	reply(w, out)
}

// handleFleetPanes answers every host's panes: ?host=H (repeatable, a
// glob) and ?state=S (repeatable, or comma-separated) keep some.
func (s *Server) handleFleetPanes(w http.ResponseWriter, r *http.Request) {
	m := s.fleetMember(w)
	if m == nil {
		return
	}
	q := r.URL.Query()
	var f fleet.PaneFilter
	for _, h := range q["host"] {
		f.Hosts = append(f.Hosts, strings.Split(h, ",")...)
	}
	for _, st := range q["state"] {
		f.States = append(f.States, strings.Split(st, ",")...)
	}
	out := []fleet.PaneRecord{}
	for _, p := range m.Panes() {
		if f.Keep(p) {
			out = append(out, p)
		}
	}
	reply(w, out)
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
	m := s.fleetMember(w)
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
		fail(w, status, code, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	var b bytes.Buffer
	if _, err := b.ReadFrom(http.MaxBytesReader(w, r.Body, MaxBody)); err != nil {
		fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("request body: %v", err))
		return nil, err
	}
	return b.Bytes(), nil
}

// handleFleetEvents streams the fleet's events as NDJSON, each with its
// host: ?host=H only that host's, ?since=RFC3339 from then, else new
// ones; ?follow=1 keeps going (else it stops once idle for a moment).
func (s *Server) handleFleetEvents(w http.ResponseWriter, r *http.Request) {
	m := s.fleetMember(w)
	if m == nil {
		return
	}
	if down, since := m.HubDown(); down {
		fail(w, http.StatusServiceUnavailable, "hub_unreachable", hubDownError(since))
		return
	}
	q := r.URL.Query()
	host := q.Get("host")
	if host != "" {
		if err := fleet.CheckName(host); err != nil {
			fail(w, http.StatusBadRequest, "bad_request", err)
			return
		}
	}
	var since time.Time
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("since %q is not RFC 3339", v))
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
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteWait))
		if err := enc.Encode(ev); err != nil {
			return err
		}
		return rc.Flush()
	})
	if err != nil && ctx.Err() == nil {
		_ = enc.Encode(map[string]string{"end": err.Error()})
	}
}

// fleetJob is a job this daemon put on the fleet's queue: its lines as
// they come, for the caller's stream.
type fleetJob struct {
	mu     sync.Mutex
	lines  [][]byte
	grew   chan struct{}
	ended  bool
	cancel context.CancelFunc
	// each: a job on each of several hosts; cancelling it cancels theirs.
	each bool
	// For corral jobs: the hosts it was queued for ("any": any host),
	// which took it (host → its pane id there), what it runs, and when.
	hosts       []string
	started     map[string]string
	name, agent string
	queued      time.Time
}

func (j *fleetJob) add(line []byte) {
	j.mu.Lock()
	j.noteStarted(line)
	j.lines = append(j.lines, append([]byte(nil), line...))
	close(j.grew)
	j.grew = make(chan struct{})
	j.mu.Unlock()
}

func (s *Server) handleFleetExec(w http.ResponseWriter, r *http.Request) {
	var req fleet.ExecRequest
	if !decode(w, r, &req) {
		return
	}
	m := s.fleetMember(w)
	if m == nil {
		return
	}
	if len(req.Exec.Command) == 0 {
		fail(w, http.StatusBadRequest, "bad_request", errors.New("no command; say what to run after --"))
		return
	}
	if req.Retry < 0 || req.Retry > 10 {
		fail(w, http.StatusBadRequest, "bad_request", errors.New("--retry must be from 0 to 10"))
		return
	}
	if down, since := m.HubDown(); down {
		fail(w, http.StatusServiceUnavailable, "hub_unreachable", fmt.Errorf("%w: the job was not queued", hubDownError(since)))
		return
	}
	var each []string
	if len(req.Hosts) > 0 || req.AllHosts {
		if req.Host != "" {
			fail(w, http.StatusBadRequest, "bad_request", errors.New("give --host, or --hosts/--all-hosts, not both"))
			return
		}
		if each = m.JobHosts(req.Hosts); len(each) == 0 {
			fail(w, http.StatusServiceUnavailable, "host_unreachable", fmt.Errorf("no reachable host that takes jobs matches %s (nothing queued); corral fleet status lists the hosts and their max_jobs",
				strings.Join(append([]string{"*"}, req.Hosts...)[min(1, len(req.Hosts)):], ",")))
			return
		}
	}
	if req.Host != "" {
		known := false
		for _, h := range m.Hosts() {
			if h.Host == req.Host {
				known = true
				if h.MaxJobs == 0 {
					fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("host %s takes no fleet jobs (its max_jobs is 0; it joins with --max-jobs N to take some)", req.Host))
					return
				}
				if !h.Reachable {
					fail(w, http.StatusServiceUnavailable, "host_unreachable", fmt.Errorf("host %s is unreachable (last seen %s); leave out --host to let any host take the job", req.Host, h.LastSeen))
					return
				}
			}
		}
		if !known {
			fail(w, http.StatusBadRequest, "not_found", fmt.Errorf("no host %s in the fleet; corral fleet status lists them", req.Host))
			return
		}
	}
	// The caller's environment stays here: the job runs in its host's
	// own (plus --env), and the queue is readable by the fleet's hosts.
	req.Exec.CallerEnv = nil
	n := s.fleetNode()
	id := fleet.NewJobID()
	ctx, cancel := context.WithCancel(context.Background())
	j := &fleetJob{grew: make(chan struct{}), cancel: cancel, each: each != nil, hosts: each, name: req.Exec.Name, agent: req.Exec.Agent,
		queued: time.Now()}
	if each == nil {
		j.hosts = []string{cmp.Or(req.Host, "any")}
	}
	n.jobs.Store(id, j)
	go func() {
		defer cancel()
		var err error
		if each != nil {
			m.SubmitEach(ctx, req.Exec, each, req.Retry, j.add)
		} else {
			err = m.SubmitJob(ctx, id, req.Exec, req.Host, req.Retry, j.add)
		}
		if err != nil {
			b, _ := json.Marshal(map[string]any{"type": "outcome", "outcome": map[string]any{"state": "error", "reason": err.Error(), "exit_code": 1}})
			j.add(b)
		}
		j.mu.Lock()
		j.ended = true
		close(j.grew)
		j.grew = make(chan struct{})
		j.mu.Unlock()
		time.AfterFunc(time.Minute, func() { n.jobs.Delete(id) })
	}()
	reply(w, map[string]any{"id": id, "hosts": each})
}

func (s *Server) fleetJob(w http.ResponseWriter, r *http.Request) *fleetJob {
	n := s.fleetNode()
	if n != nil {
		if v, ok := n.jobs.Load(r.PathValue("id")); ok {
			return v.(*fleetJob)
		}
	}
	fail(w, http.StatusNotFound, "not_found", fmt.Errorf("no fleet job %s here", r.PathValue("id")))
	return nil
}

func (s *Server) handleFleetJobStream(w http.ResponseWriter, r *http.Request) {
	j := s.fleetJob(w, r)
	if j == nil {
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	next := 0
	for {
		j.mu.Lock()
		lines, ended, grew := j.lines[next:], j.ended, j.grew
		next = len(j.lines)
		j.mu.Unlock()
		for _, l := range lines {
			_ = rc.SetWriteDeadline(time.Now().Add(streamWriteWait))
			if _, err := w.Write(append(l, '\n')); err != nil {
				return
			}
		}
		_ = rc.Flush()
		if ended {
			return
		}
		select {
		case <-grew:
		case <-r.Context().Done():
			return
		}
	}
}

func (s *Server) handleFleetJobKill(w http.ResponseWriter, r *http.Request) {
	j := s.fleetJob(w, r)
	if j == nil {
		return
	}
	if m := s.fleetNode().member.Load(); m != nil {
		_ = m.CancelJob(r.PathValue("id"))
	}
	if j.each {
		j.cancel() // each host's job is cancelled, and the run ends
	} else {
		// A job no host has taken yet ends here.
		time.AfterFunc(ExecCancelWait, j.cancel)
	}
	reply(w, map[string]string{"id": r.PathValue("id"), "status": "cancelling"})
}

// ExecCancelWait is how long a cancelled fleet job may take to confirm
// its end before the caller's daemon gives it up.
const ExecCancelWait = 5 * time.Second

// hubDownError says since when this host has lost the fleet's hub.
func hubDownError(since time.Time) error {
	return fmt.Errorf("%w (since %s, %v ago); this host keeps trying to reach it; corral fleet status says more",
		fleet.ErrHubUnreachable, since.Format(time.TimeOnly), time.Since(since).Round(time.Second))
}
