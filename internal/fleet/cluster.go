package fleet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A cluster of hubs: every hub runs an embedded NATS server routed to the
// others, and they share one set of credentials and one CA. A machine
// becomes a hub with the hub token (corral fleet join-hub): it asks a
// running hub for the credentials and CA on subjHubJoin, then routes to
// it over TLS with certificates of that CA.
const (
	subjHubJoin   = "corral.hubjoin"
	hubJoinerName = "hub-joiner"
	// AuthBucket holds the credentials file the hubs share (only hubs'
	// admin connections may read it): a host enrolled or invited on one
	// hub is known to all.
	AuthBucket  = "corral_hubauth"
	authKey     = "hub"
	clusterName = "corral"
	// MaxReplicas is how many copies of the fleet's buckets and streams a
	// cluster keeps.
	MaxReplicas = 3
)

// HubBundle is what a new hub takes from a running one.
type HubBundle struct {
	Auth  json.RawMessage `json:"auth"` // hub.json
	CA    string          `json:"ca"`
	CAKey string          `json:"ca_key"`
	// Routes are the cluster's route URLs the answering hub knows (its
	// own first); a host 0.0.0.0 means the host the new hub reached.
	Routes []string `json:"routes"`
	TLS    bool     `json:"tls"`
	// Nodes is how many servers the cluster has, the answering one with
	// its routes.
	Nodes int `json:"nodes"`
}

// routeTLS serves and dials routes with certificates of the fleet's CA,
// each end requiring the other's.
func routeTLS(dir, host string) (*tls.Config, error) {
	caCert, _, err := loadOrMakeCA(dir)
	if err != nil {
		return nil, err
	}
	cfg, _, err := serverTLS(dir, host)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	// A route is dialed by address (often 0.0.0.0-bound, or a name the
	// certificate does not list): the chain is checked against the CA,
	// not the name.
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the other hub sent no certificate")
		}
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
		if err != nil {
			return fmt.Errorf("a route whose certificate is not of this fleet's CA: %w", err)
		}
		return nil
	}
	return cfg, nil
}

// FetchHubBundle asks a running hub for what a new hub shares with it.
func FetchHubBundle(ctx context.Context, urls []string, token, fingerprint string) (HubBundle, error) {
	var b HubBundle
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// A token that may connect but not ask (the fleet token, a host's
	// credential) has its request refused in an asynchronous error, not
	// in an answer: without this the request waited out its 10 s.
	refused := func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) || strings.Contains(err.Error(), "Permissions Violation") {
			cancel(fmt.Errorf("%w: this token may not ask for the hub's credentials; join-hub takes the hub token (chj_…, in the first hub's fleet/hub.json), not the fleet token or a host's", err))
		}
	}
	opts := []nats.Option{nats.Token(token), nats.Name(clientNamePrefix + hubJoinerName), nats.CustomInboxPrefix(InboxPrefix(hubJoinerName)),
		nats.Timeout(5 * time.Second), nats.MaxReconnects(0), nats.ErrorHandler(refused)}
	secure := fingerprint != ""
	if secure {
		opts = append(opts, nats.Secure(clientTLS(fingerprint)))
	}
	for _, u := range urls {
		if !secure && !strings.HasPrefix(u, "tls://") {
			pu, err := url.Parse(u)
			if err != nil || !IsLoopback(pu.Host) {
				return b, fmt.Errorf("%s: the hub's credentials cross only TLS connections off this machine; give --ca-fingerprint (corral fleet init --tls on the first hub)", u)
			}
		}
	}
	nc, err := nats.Connect(strings.Join(urls, ","), opts...)
	if err != nil {
		return b, fmt.Errorf("cannot reach a hub at %s with the hub token: %w", strings.Join(urls, ","), err)
	}
	defer nc.Close()
	wait, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	msg, err := nc.RequestWithContext(wait, subjHubJoin, nil)
	for errors.Is(err, nats.ErrNoResponders) && wait.Err() == nil {
		// A hub that is starting: its server listens a moment before it
		// answers.
		select {
		case <-wait.Done():
		case <-time.After(200 * time.Millisecond):
			msg, err = nc.RequestWithContext(wait, subjHubJoin, nil)
		}
	}
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			err = cause
		}
		return b, fmt.Errorf("the hub at %s gave no credentials: %w", nc.ConnectedUrl(), err)
	}
	if err := json.Unmarshal(msg.Data, &b); err != nil || len(b.Auth) == 0 || b.CA == "" {
		return b, fmt.Errorf("the hub at %s answered no credentials: %s", nc.ConnectedUrl(), strings.TrimSpace(string(msg.Data)))
	}
	reached, _, _ := net.SplitHostPort(nc.ConnectedAddr())
	for i, r := range b.Routes {
		u, err := url.Parse(r)
		if err != nil {
			continue
		}
		if h, p, err := net.SplitHostPort(u.Host); err == nil && (h == "0.0.0.0" || h == "::" || h == "") && reached != "" {
			u.Host = net.JoinHostPort(reached, p)
			b.Routes[i] = u.String()
		}
	}
	return b, nil
}

// InstallHubBundle writes a bundle's credentials and CA into a fleet
// folder (a new hub's).
func InstallHubBundle(dir string, b HubBundle) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range map[string][]byte{"hub.json": b.Auth, "ca.pem": []byte(b.CA), "ca-key.pem": []byte(b.CAKey)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return fmt.Errorf("fleet hub: %w", err)
		}
	}
	return nil
}

// serveHubJoin answers a new hub with the credentials and CA.
func (h *Hub) serveHubJoin(msg *nats.Msg) {
	ca, err1 := os.ReadFile(filepath.Join(h.dir, "ca.pem"))
	key, err2 := os.ReadFile(filepath.Join(h.dir, "ca-key.pem"))
	if err := errors.Join(err1, err2); err != nil {
		_ = msg.Respond([]byte("this hub has no CA: " + err.Error()))
		return
	}
	b := HubBundle{Auth: h.auth.snapshot(), CA: string(ca), CAKey: string(key), TLS: h.tls, Nodes: h.srv.NumRoutes() + 1}
	if h.routeURL != "" {
		b.Routes = append(b.Routes, h.routeURL)
	}
	b.Routes = append(b.Routes, h.routes...)
	out, _ := json.Marshal(b)
	h.logf("fleet: a machine took this fleet's hub credentials to become one of its hubs")
	_ = msg.Respond(out)
}

// syncAuth keeps the host credentials of the cluster's hubs in step
// through a bucket, one key per host: those made or removed here are put
// there, those put there by another hub are taken. The hub that makes
// the bucket seeds it with its own; a hub that finds it takes what is
// there, dropping what it holds that the bucket does not (a credential
// revoked while it was away).
func (h *Hub) syncAuth(ctx context.Context, js jetstream.JetStream) {
	type change struct {
		name string
		c    *Credential
		// shared, for a credential made, is closed once the bucket has it.
		shared chan struct{}
	}
	puts := make(chan change, 256)
	h.auth.mu.Lock()
	h.auth.changed = func(name string, c *Credential) {
		ch := change{name: name, c: c}
		if c != nil {
			ch.shared = h.expectShared(name)
		}
		select {
		case puts <- ch:
		default:
			h.logf("fleet: the credential of host %s is not shared with the other hubs (too many changes at once)", name)
		}
	}
	h.auth.mu.Unlock()
	// copies are those the shared credentials should have: as many as the
	// fleet's pane bucket, when that has more than this hub knows of hubs.
	// The hub that makes the bucket may know fewer than the member that
	// raised the fleet's buckets before it was made (which raises only a
	// bucket it finds): the credentials once stayed at that one copy.
	copies := func(c context.Context) int {
		n := h.replicas
		if st, err := js.Stream(c, "KV_"+PanesBucket); err == nil {
			n = max(n, st.CachedInfo().Config.Replicas)
		}
		return min(n, MaxReplicas)
	}
	var kv jetstream.KeyValue
	seed := false
	for kv == nil {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		k, err := js.CreateKeyValue(c, jetstream.KeyValueConfig{Bucket: AuthBucket, History: 1, Replicas: copies(c), Storage: jetstream.FileStorage, MaxBytes: 8 << 20})
		if err == nil {
			seed = true
		} else {
			k, err = js.KeyValue(c, AuthBucket)
		}
		cancel()
		if err == nil {
			kv = k
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	// pending holds the changes made here that the bucket has not taken
	// (a put refused or timed out: a busy cluster, a leader being
	// elected). Each is tried again every 2 s, and stays in force here
	// meanwhile: the bucket's older word on that host is not taken over
	// it, and a reload does not drop it. A credential made here and never
	// shared would be refused by every other hub once this one is gone.
	pending := map[string]change{}
	share := func(ch change) {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var err error
		if ch.c == nil {
			err = kv.Delete(c, "cred."+ch.name)
		} else {
			b, _ := json.Marshal(ch.c)
			_, err = kv.Put(c, "cred."+ch.name, b)
		}
		_, again := pending[ch.name]
		switch {
		case err == nil:
			delete(pending, ch.name)
			if ch.shared != nil {
				h.shared(ch.name, ch.shared)
			}
			if again {
				h.logf("fleet: the credential of host %s is shared with the other hubs", ch.name)
			}
		case ctx.Err() != nil:
		default:
			if !again {
				h.logf("fleet: sharing the credential of host %s with the other hubs: %v (tried again every 2 s)", ch.name, err)
			}
			pending[ch.name] = ch
		}
	}
	if seed {
		for _, c := range h.auth.credentials() {
			share(change{name: c.Name, c: &c})
		}
	}
	for ctx.Err() == nil {
		w, err := kv.Watch(ctx, "cred.*")
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		initial := map[string]bool{}
		loading := true
		raiseErr := ""
		raise := time.NewTicker(2 * time.Second)
	loop:
		for {
			select {
			case <-ctx.Done():
				_ = w.Stop()
				raise.Stop()
				return
			case <-raise.C:
				// The bucket made before this hub joined, or before the
				// fleet's buckets were raised, has fewer copies than the
				// cluster now allows: raised here.
				c, cancel := context.WithTimeout(ctx, 2*time.Second)
				if st, err := js.Stream(c, "KV_"+AuthBucket); err == nil {
					if want := copies(c); st.CachedInfo().Config.Replicas < want {
						cfg := st.CachedInfo().Config
						cfg.Replicas = want
						if _, err := js.UpdateStream(c, cfg); err != nil && err.Error() != raiseErr {
							raiseErr = err.Error() // said once, tried again every 2 s
							h.logf("fleet: the hubs' shared credentials (bucket %s) have %d copies, and could not be raised to %d: %v", AuthBucket, st.CachedInfo().Config.Replicas, want, err)
						}
					}
				}
				cancel()
				for _, ch := range pending {
					share(ch)
				}
			case ch := <-puts:
				share(ch)
			case e, ok := <-w.Updates():
				if !ok {
					break loop
				}
				if e == nil {
					if loading {
						for _, c := range h.auth.credentials() {
							if _, mine := pending[c.Name]; !initial[c.Name] && !mine {
								_ = h.auth.adopt(c.Name, nil)
							}
						}
						loading = false
					}
					continue
				}
				name := strings.TrimPrefix(e.Key(), "cred.")
				if _, mine := pending[name]; mine {
					initial[name] = true
					continue // this hub's own change, newer, is on its way
				}
				if e.Operation() != jetstream.KeyValuePut {
					_ = h.auth.adopt(name, nil)
					continue
				}
				var c Credential
				if json.Unmarshal(e.Value(), &c) != nil || c.Name != name {
					continue
				}
				initial[name] = true
				if err := h.auth.adopt(name, &c); err != nil {
					h.logf("fleet: the cluster's credential of host %s: %v", name, err)
				}
			}
		}
		_ = w.Stop()
		raise.Stop()
	}
}

// Scale raises the fleet's buckets and streams to this many replicas
// (never lowers them), once the cluster has the servers for it.
func (m *Member) Scale(ctx context.Context, replicas int) error {
	return EnsureStreams(ctx, m.js, replicas)
}

// Replicas is the fewest current copies any of the fleet's buckets and
// streams has: its leader and the replicas caught up with it (0 when
// they cannot be read now). A stream's configured replicas are not yet
// copies while they catch up.
func (m *Member) Replicas(ctx context.Context) int {
	fewest := 0
	for _, name := range []string{"KV_" + PanesBucket, "KV_" + HostsBucket, EventsStream, JobsStream, OutputStream, "KV_" + AuthBucket} {
		s, err := m.js.Stream(ctx, name)
		if err != nil {
			return 0
		}
		info := s.CachedInfo()
		r := 1
		if info.Cluster == nil || info.Cluster.Leader == "" {
			return 0
		}
		for _, p := range info.Cluster.Replicas {
			if p.Current && !p.Offline {
				r++
			}
		}
		if fewest == 0 || r < fewest {
			fewest = r
		}
	}
	return fewest
}

// replicasEvery is how often ReplicasNow's loop reads Replicas.
const replicasEvery = 2 * time.Second

// ReplicasNow is Replicas as read at most replicasEvery ago (the first
// call waits for the first reading). Reading it waits up to 2 s while the
// cluster elects its leaders: fleet status, and ls --fleet and the boards
// that ask it each time, once waited so at every call, seconds after a
// hub went, with fresh views.
func (m *Member) ReplicasNow() int {
	m.replicasOnce.Do(func() {
		first := make(chan struct{})
		m.goLoop(func() {
			t := time.NewTicker(replicasEvery)
			defer t.Stop()
			read := first
			for {
				ctx, cancel := context.WithTimeout(m.ctx, 2*time.Second)
				m.replicas.Store(int32(m.Replicas(ctx)))
				cancel()
				if read != nil {
					close(read)
					read = nil
				}
				select {
				case <-m.ctx.Done():
					return
				case <-t.C:
				}
			}
		})
		<-first
	})
	return int(m.replicas.Load())
}
