package fleet

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/logger"
	"github.com/nats-io/nats-server/v2/server"
)

// HubOptions configure the embedded NATS server.
type HubOptions struct {
	// Dir holds the hub's credentials, CA and JetStream store (the state
	// folder's fleet folder).
	Dir string
	// Listen is HOST:PORT (port 0: any free one). Default 127.0.0.1:7422.
	Listen string
	// TLS serves TLS with a CA the hub makes (always, beyond loopback).
	TLS bool
	// ServerName names the server in its JetStream store; keep it stable.
	ServerName string
	// Cluster clusters this server with others (optional).
	Cluster *ClusterOptions
	// ForgetAfter is how long a host may stay unreachable before the hub
	// removes its records from the fleet (0: never).
	ForgetAfter time.Duration
	Logf        func(string, ...any)

	// cutFails, in tests, fails a removal of the records of a host over
	// its quota before it is tried.
	cutFails func(host string) bool
}

// ClusterOptions join embedded servers into one NATS cluster.
type ClusterOptions struct {
	Name   string   // default "corral"
	Listen string   // HOST:PORT for routes
	Routes []string // nats://HOST:PORT of the other servers' routes
	// Replicas is how many copies the cluster keeps of the hubs' shared
	// credentials when this hub makes them (1 to 3).
	Replicas int
}

// DefaultListen is the hub's address when none is given.
const DefaultListen = "127.0.0.1:7422"

// Hub is the embedded NATS server with JetStream.
type Hub struct {
	srv         *server.Server
	auth        *auth
	fingerprint string
	tls         bool
	dir         string
	keeper      *keeper
	name        string // its own host's name
	started     time.Time
	forgetAfter atomic.Int64 // a time.Duration
	logf        func(string, ...any)
	cutFails    func(host string) bool // HubOptions.cutFails
	// In a cluster: this server's route URL, the routes it was given,
	// and the replicas of the shared credentials.
	routeURL string
	routes   []string
	replicas int
	// sharing has, in a cluster, a channel for each credential made here
	// that the shared bucket has not taken yet, closed once it has
	// (syncAuth). A credential is handed out only then: one that lived on
	// this hub alone would be refused by every other once it is gone.
	sharingMu sync.Mutex
	sharing   map[string]chan struct{}
	shareWait time.Duration // the const shareWait; a test may lower it before use
}

// IsLoopback says whether a listen address stays on this machine.
func IsLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// StartHub starts the embedded server and waits until it takes connections.
func StartHub(o HubOptions) (*Hub, error) {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	host, portS, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %v; use HOST:PORT", o.Listen, err)
	}
	port, err := strconv.Atoi(portS)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("listen address %q: the port must be a number up to 65535", o.Listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	a, err := loadAuth(o.Dir, o.Logf)
	if err != nil {
		return nil, err
	}
	opts := &server.Options{
		ServerName: o.ServerName, Host: host, Port: port,
		JetStream: true, StoreDir: filepath.Join(o.Dir, "jetstream"),
		JetStreamMaxMemory: 64 << 20, JetStreamMaxStore: 1 << 30,
		MaxPayload: MaxMessage, MaxPending: 64 << 20,
		// What a stream takes in before it stores it: a host flooding the
		// pane bucket gets this much in on top of its quota before it is
		// cut off (the default, 128 MiB, held a flood in the hub's memory
		// and store long after its sender was gone).
		StreamMaxBufferedMsgs: 20000, StreamMaxBufferedSize: 16 << 20,
		CustomClientAuthentication: a,
		NoSigs:                     true, NoLog: os.Getenv("CORRAL_FLEET_DEBUG") == "",
		PingInterval: 2 * time.Second, MaxPingsOut: 2,
		DisableJetStreamBanner: true,
		HTTPPort:               0,
	}
	h := &Hub{auth: a, dir: o.Dir, name: o.ServerName, started: time.Now(), logf: o.Logf, cutFails: o.cutFails, shareWait: shareWait}
	h.forgetAfter.Store(int64(o.ForgetAfter))
	if h.logf == nil {
		h.logf = func(string, ...any) {}
	}
	if o.TLS || !IsLoopback(o.Listen) {
		cfg, fp, err := serverTLS(o.Dir, host)
		if err != nil {
			return nil, err
		}
		opts.TLS, opts.TLSConfig, opts.TLSTimeout = true, cfg, 5
		h.tls, h.fingerprint = true, fp
	}
	if c := o.Cluster; c != nil {
		ch, cp, err := net.SplitHostPort(c.Listen)
		if err != nil {
			return nil, fmt.Errorf("cluster listen %q: %v", c.Listen, err)
		}
		opts.Cluster.Name = cmp.Or(c.Name, clusterName)
		opts.Cluster.Host = ch
		opts.Cluster.Port, _ = strconv.Atoi(cp)
		// Routes are TLS both ways with certificates of the fleet's CA,
		// which only the hubs hold.
		rt, err := routeTLS(o.Dir, ch)
		if err != nil {
			return nil, fmt.Errorf("cluster TLS: %w", err)
		}
		opts.Cluster.TLSConfig, opts.Cluster.TLSTimeout = rt, 5
		h.routeURL = "nats://" + c.Listen
		h.routes = c.Routes
		h.replicas = min(max(c.Replicas, 1), MaxReplicas)
		// Routes authenticate with a secret derived from the admin token:
		// only servers sharing the hub's credentials (hub.json) join the
		// cluster; any other would bypass every client permission.
		user, pass := routeCredentials(a)
		opts.Cluster.Username, opts.Cluster.Password = user, pass
		// Its own route among them: JetStream in a cluster needs a route
		// configured, even on the first hub alone (the server ignores a
		// route to itself).
		seen := map[string]bool{}
		for _, r := range append([]string{h.routeURL}, c.Routes...) {
			if seen[r] {
				continue
			}
			seen[r] = true
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("cluster route %q: %v", r, err)
			}
			u.User = url.UserPassword(user, pass)
			opts.Routes = append(opts.Routes, u)
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("fleet hub: %w", err)
	}
	var debugLog server.Logger
	if os.Getenv("CORRAL_FLEET_DEBUG") != "" {
		debugLog = logger.NewStdLogger(true, true, false, false, false, logger.LogUTC(true))
	}
	startLog := newStartLog(debugLog)
	srv.SetLoggerV2(startLog, debugLog != nil, false, false)
	go srv.Start()
	if err := waitListening(srv, startLog, o.Listen, HubStartWait); err != nil {
		srv.Shutdown()
		return nil, err
	}
	h.srv = srv
	if err := startKeeper(h); err != nil {
		srv.Shutdown()
		return nil, err
	}
	return h, nil
}

func routeCredentials(a *auth) (user, pass string) {
	_, admin := a.tokens()
	return "corral-route", hashOf("route:" + admin)
}

// SetForgetAfter changes how long a host may stay unreachable before the
// hub removes it from the fleet (0: never).
func (h *Hub) SetForgetAfter(d time.Duration) { h.forgetAfter.Store(int64(max(d, 0))) }

// URL is the address members connect to.
func (h *Hub) URL() string {
	u := h.srv.ClientURL()
	if rest, ok := strings.CutPrefix(u, "nats://"); ok && h.tls {
		u = "tls://" + rest
	}
	return u
}

// Addr is the HOST:PORT the hub listens on.
func (h *Hub) Addr() string {
	if a, ok := h.srv.Addr().(*net.TCPAddr); ok {
		return a.String()
	}
	return ""
}

// HubToken lets another machine become a hub of this fleet.
func (h *Hub) HubToken() string { return h.auth.hubToken() }

// Clustered says whether this hub is one of a cluster's.
func (h *Hub) Clustered() bool { return h.routeURL != "" }

// Fingerprint is the SHA-256 of the hub's CA certificate ("" without TLS).
func (h *Hub) Fingerprint() string { return h.fingerprint }

// FleetToken is the token any host joins with.
func (h *Hub) FleetToken() string { f, _ := h.auth.tokens(); return f }

// AdminToken is the hub daemon's own credential.
func (h *Hub) AdminToken() string { _, a := h.auth.tokens(); return a }

// Refused counts connections the hub refused, and says why the last was.
func (h *Hub) Refused() (int64, string) {
	why := ""
	if p := h.auth.lastWhy.Load(); p != nil {
		why = *p
	}
	return h.auth.refused.Load(), why
}

// Invite makes a host's own credential (control: it may command other
// hosts and submit jobs; ttl > 0: it expires).
func (h *Hub) Invite(name string, control bool, ttl time.Duration) (string, error) {
	return h.InviteRights(name, Rights{Control: control, Jobs: control}, ttl)
}

// InviteRights makes a host's own credential with these rights (an
// observe-only host that takes jobs: Rights{Jobs: true}).
func (h *Hub) InviteRights(name string, r Rights, ttl time.Duration) (string, error) {
	tok, err := h.auth.invite(name, r, ttl)
	if err != nil {
		return "", err
	}
	if err := h.awaitShared(name); err != nil {
		return "", err
	}
	return tok, nil
}

// HostRights are what host's credential allows.
func (h *Hub) HostRights(host string) Rights { return h.auth.rights(host) }

// Enroll makes the own credential of a host that joined with the fleet
// token; a host that has one already is refused. In a cluster the token is
// given once the other hubs can have it (shareWait).
func (h *Hub) Enroll(name string) (string, error) {
	tok, err := h.auth.enroll(name)
	if err != nil {
		return "", err
	}
	if err := h.awaitShared(name); err != nil {
		return "", err
	}
	return tok, nil
}

// shareWait bounds how long a credential made on a hub of a cluster waits
// for the hubs' shared bucket to take it (a put fails while the cluster
// elects a leader, and is tried again every 2 s). A member's enrollment
// request waits enrollWait, longer.
const shareWait = 8 * time.Second

// expectShared is called, in a cluster, as a credential for host is made
// here: the channel is closed once the shared bucket has it.
func (h *Hub) expectShared(host string) chan struct{} {
	ch := make(chan struct{})
	h.sharingMu.Lock()
	defer h.sharingMu.Unlock()
	if h.sharing == nil {
		h.sharing = map[string]chan struct{}{}
	}
	h.sharing[host] = ch
	return ch
}

// shared says the bucket has taken the credential that ch waited for.
func (h *Hub) shared(host string, ch chan struct{}) {
	h.dropSharing(host, ch)
	close(ch)
}

// dropSharing forgets ch as host's wait, unless a newer credential has
// replaced it since, and says whether it was still host's.
func (h *Hub) dropSharing(host string, ch chan struct{}) bool {
	h.sharingMu.Lock()
	defer h.sharingMu.Unlock()
	if h.sharing[host] != ch {
		return false
	}
	delete(h.sharing, host)
	return true
}

// awaitShared waits until the credential just made for host is in the
// hubs' shared bucket. If it is not within shareWait, the credential is
// forgotten here, and the error says so: the host then has no credential
// rather than one that only this hub knows.
func (h *Hub) awaitShared(host string) error {
	h.sharingMu.Lock()
	ch := h.sharing[host]
	h.sharingMu.Unlock()
	if ch == nil {
		return nil // not a cluster, or shared already
	}
	select {
	case <-ch:
		return nil
	case <-time.After(h.shareWait):
	}
	if h.dropSharing(host, ch) {
		_ = h.auth.revoke(host)
	}
	h.logf("fleet: the credential of host %s was not taken by the hubs' shared bucket within %v; it is forgotten", host, h.shareWait)
	return fmt.Errorf("the fleet's hubs did not take host %s's credential within %v (a hub gone, or the cluster electing a leader); no credential was made: try again once corral fleet status shows the hubs", host, h.shareWait)
}

// Revoke forgets a host's credential, disconnects it, and removes its
// records from the fleet: its panes, heartbeat, events, job output and
// queued jobs.
func (h *Hub) Revoke(name string) error {
	if err := h.auth.revoke(name); err != nil {
		return err
	}
	h.kick(name)
	if err := h.forget(name, true); err != nil {
		return fmt.Errorf("host %s is revoked and disconnected, but not all its records could be removed from the fleet: %w", name, err)
	}
	return nil
}

// kick disconnects the connections authorized as user.
func (h *Hub) kick(user string) {
	for _, cid := range h.conns(user) {
		_ = h.srv.DisconnectClientByID(cid)
	}
}

// connected says whether a host has a connection (the hub's own host
// connects as its admin).
func (h *Hub) connected(host string) bool {
	return host == h.name || len(h.conns(host)) > 0 || len(h.conns("admin:"+host)) > 0
}

func (h *Hub) conns(user string) []uint64 {
	cz, err := h.srv.Connz(&server.ConnzOptions{Username: true, User: user, Limit: 100000})
	if err != nil {
		return nil
	}
	var ids []uint64
	for _, c := range cz.Conns {
		if c.AuthorizedUser == user {
			ids = append(ids, c.Cid)
		}
	}
	return ids
}

// Server is the embedded NATS server (for tests and measurements).
func (h *Hub) Server() *server.Server { return h.srv }

// Close stops the server.
func (h *Hub) Close() {
	h.keeper.stop()
	h.srv.Shutdown()
	h.srv.WaitForShutdown()
}
