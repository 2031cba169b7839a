package fleetlink

import (
	"context"
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

func joinInfo(n *node, name, token string, others ...string) fleet.JoinInfo {
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

// FleetInit makes this daemon a fleet's hub and first member, and answers
// with the command that joins it.
func (l *Link) FleetInit(req fleet.InitRequest) (fleet.JoinInfo, error) {
	if err := l.canEnterFleet(&req.Name, "this daemon is in a fleet already; corral fleet status shows it, corral fleet leave leaves it"); err != nil {
		return fleet.JoinInfo{}, err
	}
	if req.Listen == "" {
		req.Listen = fleet.DefaultListen
	}
	if req.ForgetAfterMS < 0 {
		return fleet.JoinInfo{}, httpapi.BadRequest(errors.New("--forget-after must not be negative (0: never)"))
	}
	cfg := fleet.Config{Name: req.Name, Hub: true, Listen: req.Listen, TLS: req.TLS || !fleet.IsLoopback(req.Listen), MaxJobs: req.MaxJobs,
		NotifyFleet: req.NotifyFleet, ForgetAfterMS: req.ForgetAfterMS, ClusterListen: req.ClusterListen}
	if cfg.ClusterListen != "" {
		cfg.Replicas = 1
	}
	return l.startHub(cfg)
}

// startHub runs this daemon's hub (fleet init, join-hub) and answers with
// the commands that join it.
func (l *Link) startHub(cfg fleet.Config, urls ...string) (fleet.JoinInfo, error) {
	n, err := l.run(cfg, false)
	if err != nil {
		return fleet.JoinInfo{}, httpapi.BadRequest(err)
	}
	// A port chosen by the system is kept for the next start.
	n.cfg.Listen = n.hub.Addr()
	if err := fleet.SaveConfig(l.opts.StateDir, n.cfg); err != nil {
		l.Stop(true)
		return fleet.JoinInfo{}, err
	}
	return joinInfo(n, cfg.Name, n.hub.FleetToken(), urls...), nil
}

// FleetJoinHub makes this daemon one more hub of a cluster, with the
// bundle the cluster's hubs give (fetched within ctx).
func (l *Link) FleetJoinHub(ctx context.Context, req fleet.JoinHubRequest) (fleet.JoinInfo, error) {
	if err := l.canEnterFleet(&req.Name, "this daemon is in a fleet already; corral fleet leave first"); err != nil {
		return fleet.JoinInfo{}, err
	}
	if req.ClusterListen == "" || len(req.URLs) == 0 || req.HubToken == "" {
		return fleet.JoinInfo{}, httpapi.BadRequest(errors.New("need the hubs' URLs, --hub-token and --cluster-listen HOST:PORT (the join-hub command a hub printed carries the first two)"))
	}
	if req.Listen == "" {
		req.Listen = fleet.DefaultListen
	}
	b, err := fleet.FetchHubBundle(ctx, req.URLs, req.HubToken, req.CAFingerprint)
	if err != nil {
		return fleet.JoinInfo{}, httpapi.Coded(http.StatusBadRequest, "refused", err)
	}
	if err := fleet.InstallHubBundle(fleet.Dir(l.opts.StateDir), b); err != nil {
		return fleet.JoinInfo{}, err
	}
	cfg := fleet.Config{Name: req.Name, Hub: true, Listen: req.Listen, TLS: b.TLS || !fleet.IsLoopback(req.Listen), MaxJobs: req.MaxJobs,
		NotifyFleet: req.NotifyFleet, ClusterListen: req.ClusterListen, Routes: b.Routes, Replicas: min(b.Nodes+1, fleet.MaxReplicas)}
	return l.startHub(cfg, req.URLs...)
}

func hostPort(u string) string {
	if p, err := url.Parse(u); err == nil && p.Host != "" {
		return p.Host
	}
	return u
}

// FleetJoin makes this daemon a member of the fleet at req.URLs.
func (l *Link) FleetJoin(req fleet.JoinRequest) (fleet.JoinResult, error) {
	if err := l.canEnterFleet(&req.Name, "this daemon is in a fleet already; corral fleet leave first"); err != nil {
		return fleet.JoinResult{}, err
	}
	cfg := fleet.Config{Name: req.Name, URLs: req.URLs, Token: req.Token, Creds: req.Creds, CAFingerprint: req.CAFingerprint, MaxJobs: req.MaxJobs,
		NotifyFleet: req.NotifyFleet}
	n, err := l.runOpts(cfg, false, true)
	if err != nil {
		return fleet.JoinResult{}, httpapi.Coded(http.StatusBadRequest, "refused", err)
	}
	if err := fleet.SaveConfig(l.opts.StateDir, n.cfg); err != nil {
		l.Stop(true)
		return fleet.JoinResult{}, err
	}
	return fleet.JoinResult{Name: req.Name, URLs: req.URLs}, nil
}

// FleetLeave takes this daemon out of its fleet and forgets its config.
func (l *Link) FleetLeave() (fleet.LeaveResult, error) {
	n := l.node.Load()
	if n == nil {
		return fleet.LeaveResult{}, httpapi.Conflict("no_fleet", fleet.ErrNotConfigured)
	}
	l.Stop(true)
	if err := fleet.RemoveConfig(l.opts.StateDir); err != nil {
		return fleet.LeaveResult{}, err
	}
	return fleet.LeaveResult{Left: n.cfg.Name, WasHub: n.cfg.Hub}, nil
}

// FleetInvite makes a host's credential on the hub (or revokes one).
func (l *Link) FleetInvite(req fleet.InviteRequest) (any, error) {
	n := l.node.Load()
	if n == nil || n.hub == nil {
		return nil, httpapi.Conflict("not_hub", errors.New("credentials are made on the fleet's hub (the machine that ran corral fleet init)"))
	}
	if req.Revoke {
		if err := n.hub.Revoke(req.Name); err != nil {
			return nil, httpapi.BadRequest(err)
		}
		return fleet.RevokeResult{Revoked: req.Name}, nil
	}
	if req.TakeJobs && !req.ObserveOnly {
		return nil, httpapi.BadRequest(errors.New("--take-jobs is for an observe-only credential (one with control takes jobs anyway)"))
	}
	tok, err := n.hub.InviteRights(req.Name, fleet.Rights{Control: !req.ObserveOnly, Jobs: !req.ObserveOnly || req.TakeJobs},
		time.Duration(req.ExpiresMS)*time.Millisecond)
	if err != nil {
		return nil, httpapi.BadRequest(err)
	}
	info := joinInfo(n, req.Name, tok)
	info.Join += " --name " + req.Name
	return info, nil
}

// FleetForget takes a host out of the fleet's views, on the hub.
func (l *Link) FleetForget(req fleet.ForgetRequest) (fleet.ForgetResult, error) {
	n := l.node.Load()
	if n == nil || n.hub == nil {
		return fleet.ForgetResult{}, httpapi.Conflict("not_hub", errors.New("hosts are forgotten on the fleet's hub (the machine that ran corral fleet init)"))
	}
	if err := n.hub.Forget(req.Host); err != nil {
		return fleet.ForgetResult{}, httpapi.Conflict("refused", err)
	}
	return fleet.ForgetResult{Forgotten: req.Host}, nil
}

// FleetSet changes the fleet's forget-after (on the hub) or this host's
// job limit, in the config and at once.
func (l *Link) FleetSet(req fleet.SetRequest) (fleet.SetResult, error) {
	n := l.node.Load()
	switch {
	case n == nil:
		return fleet.SetResult{}, httpapi.Conflict("not_in_fleet", errors.New("this daemon is in no fleet (corral fleet init or corral fleet join)"))
	case req.ForgetAfterMS == nil && req.MaxJobs == nil:
		return fleet.SetResult{}, httpapi.BadRequest(errors.New("nothing to set: give forget_after_ms or max_jobs"))
	case req.ForgetAfterMS != nil && n.hub == nil:
		return fleet.SetResult{}, httpapi.Conflict("not_hub", errors.New("the fleet's settings are set on its hub (the machine that ran corral fleet init)"))
	case req.ForgetAfterMS != nil && *req.ForgetAfterMS < 0:
		return fleet.SetResult{}, httpapi.BadRequest(errors.New("--forget-after must not be negative (0: never)"))
	case req.MaxJobs != nil && (*req.MaxJobs < 0 || *req.MaxJobs > math.MaxInt32):
		return fleet.SetResult{}, httpapi.BadRequest(errors.New("--max-jobs must be 0 (take no jobs) or more"))
	}
	l.setMu.Lock()
	defer l.setMu.Unlock()
	cfg, err := fleet.LoadConfig(l.opts.StateDir)
	if err != nil {
		return fleet.SetResult{}, err
	}
	if req.ForgetAfterMS != nil {
		cfg.ForgetAfterMS = *req.ForgetAfterMS
	}
	if req.MaxJobs != nil {
		cfg.MaxJobs = *req.MaxJobs
	}
	if err := fleet.SaveConfig(l.opts.StateDir, cfg); err != nil {
		return fleet.SetResult{}, err
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
				return fleet.SetResult{MaxJobs: &cfg.MaxJobs, Note: fmt.Sprintf(
					"this host's credential is observe-only: it takes no jobs until the hub runs corral fleet invite %s --observe-only --take-jobs (and this host joins with it)", cfg.Name)}, nil
			}
		}
	}
	return fleet.SetResult{ForgetAfterMS: req.ForgetAfterMS, MaxJobs: req.MaxJobs}, nil
}

// canEnterFleet refuses a daemon in a fleet already (saying already) and a
// bad host name; an empty name becomes the default one.
func (l *Link) canEnterFleet(name *string, already string) error {
	if l.node.Load() != nil {
		return httpapi.Conflict("in_fleet", errors.New(already))
	}
	if *name == "" {
		*name = fleet.DefaultName()
	}
	if err := fleet.CheckName(*name); err != nil {
		return httpapi.BadRequest(err)
	}
	return nil
}
