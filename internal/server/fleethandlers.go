package server

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/fleet"
	"github.com/corral-dev/corral/internal/httpapi"
)

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
	if !httpapi.Decode(w, r, &req) {
		return
	}
	if !s.canEnterFleet(w, &req.Name, "this daemon is in a fleet already; corral fleet status shows it, corral fleet leave leaves it") {
		return
	}
	if req.Listen == "" {
		req.Listen = fleet.DefaultListen
	}
	if req.ForgetAfterMS < 0 {
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", errors.New("--forget-after must not be negative (0: never)"))
		return
	}
	cfg := fleet.Config{Name: req.Name, Hub: true, Listen: req.Listen, TLS: req.TLS || !fleet.IsLoopback(req.Listen), MaxJobs: req.MaxJobs,
		NotifyFleet: req.NotifyFleet, ForgetAfterMS: req.ForgetAfterMS, ClusterListen: req.ClusterListen}
	if cfg.ClusterListen != "" {
		cfg.Replicas = 1
	}
	s.startHub(w, cfg)
}

// startHub runs this daemon's hub (fleet init, join-hub) and answers with
// the commands that join it.
func (s *Server) startHub(w http.ResponseWriter, cfg fleet.Config, urls ...string) {
	n, err := s.runFleet(cfg, false)
	if err != nil {
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", err)
		return
	}
	// A port chosen by the system is kept for the next start.
	n.cfg.Listen = n.hub.Addr()
	if err := fleet.SaveConfig(s.opts.StateDir, n.cfg); err != nil {
		s.stopFleet(true)
		httpapi.Fail(w, http.StatusInternalServerError, "internal", err)
		return
	}
	httpapi.Reply(w, joinInfo(n, cfg.Name, n.hub.FleetToken(), urls...))
}

func (s *Server) handleFleetJoinHub(w http.ResponseWriter, r *http.Request) {
	var req fleet.JoinHubRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	if !s.canEnterFleet(w, &req.Name, "this daemon is in a fleet already; corral fleet leave first") {
		return
	}
	if req.ClusterListen == "" || len(req.URLs) == 0 || req.HubToken == "" {
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", errors.New("need the hubs' URLs, --hub-token and --cluster-listen HOST:PORT (the join-hub command a hub printed carries the first two)"))
		return
	}
	if req.Listen == "" {
		req.Listen = fleet.DefaultListen
	}
	b, err := fleet.FetchHubBundle(r.Context(), req.URLs, req.HubToken, req.CAFingerprint)
	if err != nil {
		httpapi.Fail(w, http.StatusBadRequest, "refused", err)
		return
	}
	if err := fleet.InstallHubBundle(fleet.Dir(s.opts.StateDir), b); err != nil {
		httpapi.Fail(w, http.StatusInternalServerError, "internal", err)
		return
	}
	cfg := fleet.Config{Name: req.Name, Hub: true, Listen: req.Listen, TLS: b.TLS || !fleet.IsLoopback(req.Listen), MaxJobs: req.MaxJobs,
		NotifyFleet: req.NotifyFleet, ClusterListen: req.ClusterListen, Routes: b.Routes, Replicas: min(b.Nodes+1, fleet.MaxReplicas)}
	s.startHub(w, cfg, req.URLs...)
}

func hostPort(u string) string {
	if p, err := url.Parse(u); err == nil && p.Host != "" {
		return p.Host
	}
	return u
}

func (s *Server) handleFleetJoin(w http.ResponseWriter, r *http.Request) {
	var req fleet.JoinRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	if !s.canEnterFleet(w, &req.Name, "this daemon is in a fleet already; corral fleet leave first") {
		return
	}
	cfg := fleet.Config{Name: req.Name, URLs: req.URLs, Token: req.Token, Creds: req.Creds, CAFingerprint: req.CAFingerprint, MaxJobs: req.MaxJobs,
		NotifyFleet: req.NotifyFleet}
	n, err := s.runFleetOpts(cfg, false, true)
	if err != nil {
		httpapi.Fail(w, http.StatusBadRequest, "refused", err)
		return
	}
	if err := fleet.SaveConfig(s.opts.StateDir, n.cfg); err != nil {
		s.stopFleet(true)
		httpapi.Fail(w, http.StatusInternalServerError, "internal", err)
		return
	}
	httpapi.Reply(w, fleet.JoinResult{Name: req.Name, URLs: req.URLs})
}

func (s *Server) handleFleetLeave(w http.ResponseWriter, r *http.Request) {
	n := s.fleetNode()
	if n == nil {
		httpapi.Fail(w, http.StatusConflict, "no_fleet", fleet.ErrNotConfigured)
		return
	}
	s.stopFleet(true)
	if err := fleet.RemoveConfig(s.opts.StateDir); err != nil {
		httpapi.Fail(w, http.StatusInternalServerError, "internal", err)
		return
	}
	httpapi.Reply(w, fleet.LeaveResult{Left: n.cfg.Name, WasHub: n.cfg.Hub})
}

func (s *Server) handleFleetInvite(w http.ResponseWriter, r *http.Request) {
	var req fleet.InviteRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	n := s.fleetNode()
	if n == nil || n.hub == nil {
		httpapi.Fail(w, http.StatusConflict, "not_hub", errors.New("credentials are made on the fleet's hub (the machine that ran corral fleet init)"))
		return
	}
	if req.Revoke {
		if err := n.hub.Revoke(req.Name); err != nil {
			httpapi.Fail(w, http.StatusBadRequest, "bad_request", err)
			return
		}
		httpapi.Reply(w, fleet.RevokeResult{Revoked: req.Name})
		return
	}
	if req.TakeJobs && !req.ObserveOnly {
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", errors.New("--take-jobs is for an observe-only credential (one with control takes jobs anyway)"))
		return
	}
	tok, err := n.hub.InviteRights(req.Name, fleet.Rights{Control: !req.ObserveOnly, Jobs: !req.ObserveOnly || req.TakeJobs},
		time.Duration(req.ExpiresMS)*time.Millisecond)
	if err != nil {
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", err)
		return
	}
	info := joinInfo(n, req.Name, tok)
	info.Join += " --name " + req.Name
	httpapi.Reply(w, info)
}

func (s *Server) handleFleetForget(w http.ResponseWriter, r *http.Request) {
	var req fleet.ForgetRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	n := s.fleetNode()
	if n == nil || n.hub == nil {
		httpapi.Fail(w, http.StatusConflict, "not_hub", errors.New("hosts are forgotten on the fleet's hub (the machine that ran corral fleet init)"))
		return
	}
	if err := n.hub.Forget(req.Host); err != nil {
		httpapi.Fail(w, http.StatusConflict, "refused", err)
		return
	}
	httpapi.Reply(w, fleet.ForgetResult{Forgotten: req.Host})
}

func (s *Server) handleFleetSet(w http.ResponseWriter, r *http.Request) {
	var req fleet.SetRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	n := s.fleetNode()
	switch {
	case n == nil:
		httpapi.Fail(w, http.StatusConflict, "not_in_fleet", errors.New("this daemon is in no fleet (corral fleet init or corral fleet join)"))
		return
	case req.ForgetAfterMS == nil && req.MaxJobs == nil:
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", errors.New("nothing to set: give forget_after_ms or max_jobs"))
		return
	case req.ForgetAfterMS != nil && n.hub == nil:
		httpapi.Fail(w, http.StatusConflict, "not_hub", errors.New("the fleet's settings are set on its hub (the machine that ran corral fleet init)"))
		return
	case req.ForgetAfterMS != nil && *req.ForgetAfterMS < 0:
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", errors.New("--forget-after must not be negative (0: never)"))
		return
	case req.MaxJobs != nil && (*req.MaxJobs < 0 || *req.MaxJobs > math.MaxInt32):
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", errors.New("--max-jobs must be 0 (take no jobs) or more"))
		return
	}
	s.fleetSetMu.Lock()
	defer s.fleetSetMu.Unlock()
	cfg, err := fleet.LoadConfig(s.opts.StateDir)
	if err != nil {
		httpapi.Fail(w, http.StatusInternalServerError, "internal", err)
		return
	}
	if req.ForgetAfterMS != nil {
		cfg.ForgetAfterMS = *req.ForgetAfterMS
	}
	if req.MaxJobs != nil {
		cfg.MaxJobs = *req.MaxJobs
	}
	if err := fleet.SaveConfig(s.opts.StateDir, cfg); err != nil {
		httpapi.Fail(w, http.StatusInternalServerError, "internal", err)
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
				httpapi.Reply(w, fleet.SetResult{MaxJobs: &cfg.MaxJobs, Note: fmt.Sprintf(
					"this host's credential is observe-only: it takes no jobs until the hub runs corral fleet invite %s --observe-only --take-jobs (and this host joins with it)", cfg.Name)})
				return
			}
		}
	}
	httpapi.Reply(w, fleet.SetResult{ForgetAfterMS: req.ForgetAfterMS, MaxJobs: req.MaxJobs})
}

// canEnterFleet refuses a daemon in a fleet already (saying already) and a
// bad host name; an empty name becomes the default one.
func (s *Server) canEnterFleet(w http.ResponseWriter, name *string, already string) bool {
	if s.fleetNode() != nil {
		httpapi.Fail(w, http.StatusConflict, "in_fleet", errors.New(already))
		return false
	}
	if *name == "" {
		*name = fleet.DefaultName()
	}
	if err := fleet.CheckName(*name); err != nil {
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", err)
		return false
	}
	return true
}
