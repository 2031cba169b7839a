// Package fleetlink is the daemon's bridge to its fleet: it starts and
// stops the daemon's hub and member, serves the API's /v1/fleet/ routes
// and the routes that reach other hosts (httpapi.Fleet, httpapi.Proxy),
// queues fleet jobs and follows their lines, hands other hosts' events to
// the daemon's notifications, and gives the web board every host's panes.
//
// It knows the local daemon only as a Daemon; the server holds one Link
// and passes itself, as that interface, to New.
package fleetlink

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
	"github.com/corral-dev/corral/internal/httpapi"
)

// Daemon is the local daemon as the fleet sees it: its panes and jobs,
// its events, its API and its terminals.
type Daemon interface {
	// Handler is the daemon's own API, served in process to other hosts.
	Handler() http.Handler
	// Panes are the daemon's panes and jobs (not the lost ones), in start
	// order.
	Panes() []api.Pane
	// Pane is the pane or job of that id (not a name).
	Pane(id string) (api.Pane, bool)
	// Exists says whether ref (an id or a name) names a pane or a job.
	Exists(ref string) error
	// Subscribe returns new events (the channel closes when the
	// subscriber fell behind), the kept ones after seq, and a stop.
	Subscribe(after uint64) (<-chan eventlog.Event, []eventlog.Event, func())
	// Attach joins another host's terminal to one of the daemon's panes;
	// a job refuses.
	Attach(ref string) (httpapi.Session, error)
	// Notify hands an event of another host's pane to the daemon's
	// notifications.
	Notify(e eventlog.Event)
}

// Options configure a Link.
type Options struct {
	// StateDir is the daemon's state folder: the fleet's config and keys
	// are under it.
	StateDir string
	Logf     func(format string, args ...any)
}

// Link is the daemon's part in a fleet, while it is in one.
type Link struct {
	d    Daemon
	opts Options
	// node is the fleet node while the daemon is in a fleet: set by run,
	// cleared by Stop, read without a lock.
	node atomic.Pointer[node]
	// setMu orders the writes of fleet/config.json after the fleet
	// started (FleetSet, and a member that got its own credential); it is
	// held across the load and the save, and nothing else is taken under
	// it.
	setMu sync.Mutex
}

// New returns the bridge of daemon d, in no fleet yet (Start joins the
// configured one).
func New(d Daemon, o Options) *Link {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return &Link{d: d, opts: o}
}

// local is the daemon as its fleet member sees it (a fleet.Local and
// fleet.Attacher).
type local struct{ Daemon }

func (l local) Attach(ref string) (fleet.AttachSession, error) {
	sess, err := l.Daemon.Attach(ref)
	if err != nil {
		return nil, err // not a nil Session in a non-nil AttachSession
	}
	return sess, nil
}

// node is the daemon's part in a fleet: the hub (if it is one) and its
// member.
type node struct {
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

// Start starts the fleet the state folder's config describes, if
// any. A member that cannot reach its fleet keeps trying in the
// background.
func (l *Link) Start() {
	cfg, err := fleet.LoadConfig(l.opts.StateDir)
	if errors.Is(err, fleet.ErrNotConfigured) {
		return
	}
	if err != nil {
		l.opts.Logf("fleet: %v", err)
		return
	}
	if _, err := l.run(cfg, true); err != nil {
		l.opts.Logf("fleet: %v", err)
	}
}

// run starts a hub (cfg.Hub) and a member. With background, a
// member that cannot connect yet keeps trying; otherwise the error is
// returned and nothing stays started.
func (l *Link) run(cfg fleet.Config, background bool) (*node, error) {
	return l.runOpts(cfg, background, false)
}

func (l *Link) runOpts(cfg fleet.Config, background, first bool) (*node, error) {
	n := &node{cfg: cfg}
	n.maxJobs.Store(int32(cfg.MaxJobs))
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	hostID, err := fleet.LoadHostID(l.opts.StateDir)
	if err != nil {
		cancel()
		return nil, err
	}
	mo := fleet.MemberOptions{Name: cfg.Name, HostID: hostID, URLs: cfg.URLs, Token: cfg.Token, Creds: cfg.Creds, CAFingerprint: cfg.CAFingerprint,
		MaxJobs: cfg.MaxJobs, Version: buildinfo.Self().Version, Local: local{l.d}, Watch: true, Logf: l.opts.Logf, RefuseTaken: first,
		Replicas: cfg.Replicas}
	if cfg.Hub {
		ho := fleet.HubOptions{Dir: fleet.Dir(l.opts.StateDir), Listen: cfg.Listen, TLS: cfg.TLS,
			ServerName: cfg.Name, ForgetAfter: time.Duration(cfg.ForgetAfterMS) * time.Millisecond, Logf: l.opts.Logf}
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
	if !l.node.CompareAndSwap(nil, n) {
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
		go l.notifyFleet(ctx, n)
	}
	if m != nil {
		n.member.Store(m)
		l.opts.Logf("fleet: host %s joined %s", cfg.Name, strings.Join(mo.URLs, ","))
		return n, nil
	}
	l.opts.Logf("fleet: %v; trying again every 2s", err)
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
				l.opts.Logf("fleet: host %s joined %s", cfg.Name, strings.Join(mo.URLs, ","))
				if tok := m.Token(); tok != cfg.Token {
					l.setMu.Lock()
					// The config on disk, not cfg: fleet set may have changed it.
					c, err := fleet.LoadConfig(l.opts.StateDir)
					if err == nil {
						c.Token = tok
						err = fleet.SaveConfig(l.opts.StateDir, c)
					}
					l.setMu.Unlock()
					if err != nil {
						l.opts.Logf("fleet: keep this host's own credential: %v", err)
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
func (l *Link) notifyFleet(ctx context.Context, n *node) {
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
			l.d.Notify(e)
			return nil
		})
		if err != nil && ctx.Err() == nil {
			l.opts.Logf("fleet notifications: %v; following again", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// Stop leaves the fleet (forget: the host's panes leave its view).
func (l *Link) Stop(forget bool) {
	n := l.node.Load()
	if n == nil {
		return
	}
	l.node.CompareAndSwap(n, nil)
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
func (l *Link) localColonRef(host, rest string) (string, bool) {
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
	if err := l.d.Exists(full); err != nil {
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
