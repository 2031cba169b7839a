package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
	"github.com/nats-io/nats.go"
)

// Three hubs made the way the CLI makes them: the first alone, the
// others with the hub token (credentials and CA fetched from a running
// hub); routes over TLS; one hub goes and the fleet goes on, a host
// enrolled on one hub known to the others.
func hubClusterJoinHub(t *testing.T) {
	proctest.Slow(t, "hub clusters joined and killed, about 30 s")
	clusterParallel(t)
	type node struct {
		dir string
		hub *Hub
		adm *Member
	}
	nodes := make([]*node, 3)
	start := func(i int, routes []string, replicas int) {
		n := nodes[i]
		h, err := StartHub(HubOptions{Dir: n.dir, Listen: "127.0.0.1:0", TLS: true, ServerName: []string{"h0", "h1", "h2"}[i],
			Cluster: &ClusterOptions{Listen: proctest.FreeLoopbackAddr(t), Routes: routes, Replicas: replicas}})
		if err != nil {
			t.Fatalf("hub %d: %v", i, err)
		}
		n.hub = h
	}
	member := func(i int) {
		n, h := nodes[i], nodes[i].hub
		waitFor(t, 30*time.Second, "the hub's member joins", func() bool {
			m, err := Join(context.Background(), MemberOptions{Name: h.name, URLs: []string{h.URL()}, Token: h.AdminToken(), CAFingerprint: h.Fingerprint(),
				Admin: true, Replicas: 1, Watch: true, Enroll: h.Enroll, Unenroll: h.Revoke, Rights: h.HostRights})
			if err != nil {
				t.Logf("hub %d member: %v", i, err)
				return false
			}
			n.adm = m
			return true
		})
	}
	for i := range nodes {
		nodes[i] = &node{dir: t.TempDir()}
	}
	defer func() {
		for _, n := range nodes {
			if n.adm != nil {
				n.adm.Close(false)
			}
			if n.hub != nil {
				n.hub.Close()
			}
		}
	}()
	start(0, nil, 1)
	first := nodes[0].hub
	hubToken := first.auth.hubToken()
	// A wrong hub token gets nothing.
	if _, err := FetchHubBundle(context.Background(), []string{first.URL()}, "chj_wrong", first.Fingerprint()); err == nil {
		t.Fatal("a wrong hub token fetched the credentials")
	}
	// The fleet token (every member has it) gets nothing either, and is
	// told so at once, not after the request's 10 s.
	if _, err := FetchHubBundle(context.Background(), []string{first.URL()}, first.FleetToken(), first.Fingerprint()); err == nil {
		t.Fatal("the fleet token fetched the hub credentials")
	} else if !strings.Contains(err.Error(), "may not ask for the hub's credentials") {
		t.Fatalf("the fleet token's refusal does not say why: %v", err)
	}
	for i := 1; i < 3; i++ {
		var urls []string
		for _, n := range nodes[:i] {
			urls = append(urls, n.hub.URL())
		}
		b, err := FetchHubBundle(context.Background(), urls, hubToken, first.Fingerprint())
		if err != nil {
			t.Fatal(err)
		}
		if err := InstallHubBundle(nodes[i].dir, b); err != nil {
			t.Fatal(err)
		}
		start(i, b.Routes, min(b.Nodes+1, MaxReplicas))
	}
	// JetStream in a cluster waits for a second server and its meta
	// leader: a bucket asked for before then is made only once there is
	// one (a member's set-up waited the whole of its timeout).
	waitFor(t, 30*time.Second, "the cluster's JetStream meta leader", func() bool {
		for _, n := range nodes {
			if n.hub.Server().JetStreamIsLeader() {
				return true
			}
		}
		return false
	})
	for i := range nodes {
		member(i)
	}
	waitFor(t, 20*time.Second, "three routed hubs", func() bool {
		for _, n := range nodes {
			if n.hub.Server().NumRoutes() < 2 {
				return false
			}
		}
		return true
	})
	for _, n := range nodes {
		if n.hub.Fingerprint() != first.Fingerprint() {
			t.Fatal("the hubs do not share one CA")
		}
	}
	waitFor(t, 30*time.Second, "the fleet's streams at 3 replicas", func() bool {
		return nodes[2].adm.Scale(context.Background(), 3) == nil
	})
	// A stream scaled up is not yet copied: a leader that goes before
	// its new replicas caught up leaves a stream no hub can lead (its
	// heartbeats then had "no response from stream" for a minute).
	copies := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return nodes[2].adm.Replicas(ctx) == 3
	}
	if !proctest.WaitFor(60*time.Second*waitSlack, copies) {
		for _, name := range []string{"KV_" + PanesBucket, "KV_" + HostsBucket, EventsStream, JobsStream, OutputStream, "KV_" + AuthBucket} {
			s, err := nodes[2].adm.js.Stream(context.Background(), name)
			if err != nil {
				t.Logf("%s: %v", name, err)
				continue
			}
			i := s.CachedInfo()
			t.Logf("%s: R%d msgs %d leader %q", name, i.Config.Replicas, i.State.Msgs, i.Cluster.Leader)
			for _, p := range i.Cluster.Replicas {
				t.Logf("  replica %+v", *p)
			}
		}
		t.Fatal("timed out waiting for three current copies of every stream")
	}
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.hub.URL())
	}
	la, lb := newFakeLocal("p1"), newFakeLocal("q1")
	a, err := Join(context.Background(), MemberOptions{Name: "a", URLs: urls[:1], Token: first.FleetToken(), CAFingerprint: first.Fingerprint(), Local: la, Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(false)
	b, err := Join(context.Background(), MemberOptions{Name: "b", URLs: urls[1:2], Token: first.FleetToken(), CAFingerprint: first.Fingerprint(), Local: lb, Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(false)
	if a.Token() == first.FleetToken() || b.Token() == first.FleetToken() {
		t.Fatal("members kept the fleet token")
	}
	// Every hub knows both hosts' own credentials.
	waitFor(t, 10*time.Second, "every hub knows the enrolled hosts", func() bool {
		for _, n := range nodes {
			if _, ok := n.hub.auth.credential("a"); !ok {
				return false
			}
			if _, ok := n.hub.auth.credential("b"); !ok {
				return false
			}
		}
		return true
	})
	waitFor(t, 10*time.Second, "a sees b:q1", func() bool { return paneState(a, "b", "q1") == "idle" })
	// a is connected to the first hub (the only URL it was given): that
	// one goes, and a finds the others from the cluster's INFO.
	nodes[0].adm.Close(false)
	nodes[0].adm = nil
	nodes[0].hub.Close()
	nodes[0].hub = nil
	lost := time.Now()
	defer func() {
		if t.Failed() {
			t.Logf("a: %+v servers %v", a.Stats(), a.nc.Servers())
			t.Logf("b: %+v", b.Stats())
			if si, err := nodes[1].adm.js.Stream(context.Background(), "KV_"+PanesBucket); err == nil {
				t.Logf("panes: replicas %d cluster %+v", si.CachedInfo().Config.Replicas, si.CachedInfo().Cluster)
			}
		}
	}()
	la.set("p1", "working")
	waitFor(t, 20*time.Second, "b sees a:p1 working after a hub went", func() bool { return paneState(b, "a", "p1") == "working" })
	t.Logf("a state crossed %v after the hub went", time.Since(lost).Round(time.Millisecond))
	waitFor(t, 20*time.Second, "b sees a reachable again", func() bool { r, _ := hostReachable(b, "a"); return r })
	t.Logf("a reachable from b %v after the hub went", time.Since(lost).Round(time.Millisecond))
	status, _, err := b.Request(context.Background(), "a", "GET", "/v1/panes/p1", nil)
	if err != nil || status != 200 {
		t.Fatalf("a command after a hub went: %d %v", status, err)
	}
}

// A stream leader killed after it took a write never acknowledges it,
// and the member's connection (to a hub that lives) sees no error: here
// the pane bucket stops acknowledging (NoAck) while several of a host's
// panes change, then acknowledges again, and the host's later changes
// must still reach the bucket.
func TestPaneWritesGoOnAfterUnacknowledgedOnes(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	la := newFakeLocal("p1", "p2", "p3")
	a := f.join("a", la, 0)
	ctx := context.Background()
	kv, err := f.hm.js.KeyValue(ctx, PanesBucket)
	if err != nil {
		t.Fatal(err)
	}
	state := func(id string) string {
		e, err := kv.Get(ctx, "a."+id)
		if err != nil {
			return ""
		}
		var rec PaneRecord
		_ = json.Unmarshal(e.Value(), &rec)
		return rec.State
	}
	waitFor(t, 10*time.Second, "a's panes in the bucket", func() bool { return state("p3") == "idle" })
	setNoAck := func(on bool) {
		t.Helper()
		st, err := f.hm.js.Stream(ctx, "KV_"+PanesBucket)
		if err != nil {
			t.Fatal(err)
		}
		cfg := st.CachedInfo().Config
		cfg.NoAck = on
		if _, err := f.hm.js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	setNoAck(true)
	for _, id := range []string{"p1", "p2", "p3"} {
		la.set(id, "working")
	}
	// The writes are taken unacknowledged, then written again together
	// (a batch of several awaited acknowledgements) until acknowledged.
	waitFor(t, 10*time.Second, "the unacknowledged writes stored", func() bool {
		return state("p1") == "working" && state("p2") == "working" && state("p3") == "working"
	})
	waitFor(t, 4*pubAckWait, "several writes awaiting their acknowledgements", func() bool { return a.js.PublishAsyncPending() >= 2 })
	setNoAck(false)
	changed := time.Now()
	la.set("p1", "blocked")
	waitFor(t, 4*pubAckWait, "a's change after its writes went unacknowledged", func() bool { return state("p1") == "blocked" })
	t.Logf("a's pane write reached the bucket %v after the bucket acknowledged again; %+v", time.Since(changed).Round(time.Millisecond), a.Stats())
}

// The hubs' shared credentials get as many copies as the fleet's
// buckets, also when a member raised those before the credentials'
// bucket was made (it raises only a bucket it finds) and each hub knows
// of fewer hubs: the bucket once stayed at one copy for good.
func authBucketFollowsTheFleetsCopies(t *testing.T) {
	proctest.Slow(t, "a cluster of three hubs, about 20 s")
	clusterParallel(t)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	routes := []string{"nats://" + proctest.FreeLoopbackAddr(t), "nats://" + proctest.FreeLoopbackAddr(t), "nats://" + proctest.FreeLoopbackAddr(t)}
	if _, _, err := loadOrMakeCA(dirs[0]); err != nil {
		t.Fatal(err)
	}
	hubs := make([]*Hub, 3)
	for i := range hubs {
		if i > 0 {
			for _, f := range []string{"hub.json", "ca.pem", "ca-key.pem"} {
				copyFile(t, filepath.Join(dirs[0], f), filepath.Join(dirs[i], f))
			}
		}
		// Each hub knows of itself alone: one copy of what it makes.
		h, err := StartHub(HubOptions{Dir: dirs[i], Listen: "127.0.0.1:0", ServerName: fmt.Sprintf("a%d", i),
			Cluster: &ClusterOptions{Name: "corral", Listen: strings.TrimPrefix(routes[i], "nats://"), Routes: routes, Replicas: 1}})
		if err != nil {
			t.Fatalf("hub %d: %v", i, err)
		}
		hubs[i] = h
		t.Cleanup(h.Close)
	}
	admin := joinAdmin(t, hubs, 1)
	ctx := context.Background()
	copies := func(stream string) int {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		st, err := admin.js.Stream(c, stream)
		if err != nil {
			return 0
		}
		return st.CachedInfo().Config.Replicas
	}
	waitFor(t, 10*time.Second, "the hubs' credentials bucket made", func() bool { return copies("KV_"+AuthBucket) == 1 })
	// The fleet's pane bucket raised alone, as if before the credentials'
	// bucket was made.
	st, err := admin.js.Stream(ctx, "KV_"+PanesBucket)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.Replicas = 3
	if _, err := admin.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(t, 10*time.Second, "three copies of the hubs' credentials", func() bool { return copies("KV_"+AuthBucket) == 3 })
	t.Logf("the credentials' bucket had three copies %v after the pane bucket", time.Since(start).Round(time.Millisecond))
}

func clusterLosesANode(t *testing.T) {
	proctest.Slow(t, "a cluster of three hubs loses one, about 10 s")
	clusterParallel(t)
	hubs, routes := startThreeHubs(t, "n", nil)
	var urls []string
	for _, h := range hubs {
		urls = append(urls, h.URL())
	}
	// A server without the hub's credentials cannot route into the
	// cluster (it would bypass every client permission).
	rogue, err := StartHub(HubOptions{Dir: t.TempDir(), Listen: "127.0.0.1:0", ServerName: "rogue",
		Cluster: &ClusterOptions{Name: "corral", Listen: proctest.FreeLoopbackAddr(t), Routes: routes}})
	if err != nil {
		t.Fatal(err)
	}
	defer rogue.Close()
	// JetStream needs its meta leader before streams can be made: the
	// first join waits for it (before, its first bucket waited out the
	// whole set-up, 30 s, for an answer the cluster never sent, and failed).
	start := time.Now()
	admin, err := Join(context.Background(), MemberOptions{Name: "admin", URLs: urls, Token: hubs[0].AdminToken(), Admin: true, Replicas: 3, Watch: true})
	if err != nil {
		t.Fatalf("the admin's join of the new cluster: %v", err)
	}
	t.Logf("the admin joined the new cluster in %v", time.Since(start).Round(time.Millisecond))
	defer admin.Close(false)
	waitFor(t, 10*time.Second, "the three nodes routed to each other", func() bool {
		for _, h := range hubs {
			if h.Server().NumRoutes() < 2 {
				return false
			}
		}
		return true
	})
	if n := rogue.Server().NumRoutes(); n != 0 {
		t.Fatalf("a server without the hub's credentials has %d routes into the cluster", n)
	}
	la, lb := newFakeLocal("p1"), newFakeLocal("q1")
	a, err := Join(context.Background(), MemberOptions{Name: "a", URLs: []string{urls[1], urls[2], urls[0]}, Token: hubs[0].FleetToken(), Local: la, Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(false)
	b, err := Join(context.Background(), MemberOptions{Name: "b", URLs: []string{urls[2], urls[0], urls[1]}, Token: hubs[0].FleetToken(), Local: lb, Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(false)
	waitFor(t, 10*time.Second, "a sees b:q1", func() bool { return paneState(a, "b", "q1") == "idle" })
	waitFor(t, 30*time.Second, "three current copies of every stream", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return admin.Replicas(ctx) == 3
	})
	// One node goes; the fleet goes on.
	hubs[1].Close()
	hubs[1] = nil
	lb.set("q1", "blocked")
	waitFor(t, 15*time.Second, "a sees b:q1 blocked after losing a node", func() bool { return paneState(a, "b", "q1") == "blocked" })
	la.set("p1", "working")
	defer func() {
		t.Logf("a: %+v; admin sees a:p1 %q; b sees %q", a.Stats(), paneState(admin, "a", "p1"), paneState(b, "a", "p1"))
	}()
	waitFor(t, 15*time.Second, "b sees a:p1 working", func() bool { return paneState(b, "a", "p1") == "working" })
	status, _, err := a.Request(context.Background(), "b", "GET", "/v1/panes/q1", nil)
	if err != nil || status != 200 {
		t.Fatalf("a command across the shrunk cluster: %d %v", status, err)
	}
}

var _ = nats.ErrTimeout

// startThreeHubs starts a cluster of three hubs (servers PREFIX0..2) that
// share one set of credentials and log to logf (nil: nowhere), closed at
// the test's end, and returns them with their route URLs.
func startThreeHubs(t *testing.T, prefix string, logf func(string, ...any)) ([]*Hub, []string) {
	t.Helper()
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	// Ports free now, not fixed ones: another run of these tests (or one
	// of this run's hubs not closed yet) may hold a fixed port, and a hub
	// whose route port is taken never starts.
	routes := []string{"nats://" + proctest.FreeLoopbackAddr(t), "nats://" + proctest.FreeLoopbackAddr(t), "nats://" + proctest.FreeLoopbackAddr(t)}
	hubs := make([]*Hub, 3)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	// The first node's credentials and CA, before the others copy them.
	if _, _, err := loadOrMakeCA(dirs[0]); err != nil {
		t.Fatal(err)
	}
	for i := range hubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The three share one set of credentials.
			if i > 0 {
				for _, f := range []string{"hub.json", "ca.pem", "ca-key.pem"} {
					copyFile(t, filepath.Join(dirs[0], f), filepath.Join(dirs[i], f))
				}
			}
			hubs[i], errs[i] = StartHub(HubOptions{Dir: dirs[i], Listen: "127.0.0.1:0", ServerName: fmt.Sprintf("%s%d", prefix, i), Logf: logf,
				Cluster: &ClusterOptions{Name: "corral", Listen: strings.TrimPrefix(routes[i], "nats://"), Routes: routes}})
		}()
		if i == 0 {
			wg.Wait() // its hub.json first
		}
	}
	wg.Wait()
	t.Cleanup(func() { // also the nodes that started when another did not
		for _, h := range hubs {
			if h != nil {
				h.Close()
			}
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
	}
	return hubs, routes
}

// A credential made on one hub while the hubs' shared bucket refuses it
// is handed out once the bucket takes puts again, and not before: the
// other hubs then let the host in, as they must once its own hub is gone.
// One the bucket refuses for longer than the hub waits is not handed out.
func refusedCredentialSharedLater(t *testing.T) {
	proctest.Slow(t, "a cluster of three hubs, about 20 s")
	clusterParallel(t)
	var logMu sync.Mutex
	var logged []string
	hubs, _ := startThreeHubs(t, "r", func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		logged = append(logged, fmt.Sprintf(format, args...))
	})
	said := func(text string) bool {
		logMu.Lock()
		defer logMu.Unlock()
		return slices.ContainsFunc(logged, func(l string) bool { return strings.Contains(l, text) })
	}
	admin := joinAdmin(t, hubs, 0)
	ctx := context.Background()
	if _, err := hubs[0].Invite("first", false, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the first credential on every hub", func() bool {
		_, ok1 := hubs[1].auth.credential("first")
		_, ok2 := hubs[2].auth.credential("first")
		return ok1 && ok2
	})
	// The bucket full: a new key is refused (a bucket discards new).
	full := func(full bool) {
		t.Helper()
		st, err := admin.js.Stream(ctx, "KV_"+AuthBucket)
		if err != nil {
			t.Fatal(err)
		}
		cfg := st.CachedInfo().Config
		cfg.MaxMsgs = -1
		if full {
			cfg.MaxMsgs = int64(st.CachedInfo().State.Msgs)
		}
		if _, err := admin.js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	full(true)
	// A credential the bucket refuses is not handed out: the invite waits
	// for the bucket, and once it has waited its bound it fails, and the
	// credential is forgotten rather than known to this hub alone (a host
	// holding it would be refused by every other hub once this one goes).
	hubs[0].shareWait = 3 * time.Second
	if _, err := hubs[0].Invite("never", false, 0); err == nil || !strings.Contains(err.Error(), "did not take host never's credential") {
		t.Fatalf("an invite whose credential the bucket refused: %v", err)
	}
	if _, ok := hubs[0].auth.credential("never"); ok {
		t.Fatal("the hub kept a credential that no other hub has")
	}
	// One the bucket takes while the invite waits is handed out then.
	hubs[0].shareWait = 30 * time.Second
	invited := make(chan error, 1)
	go func() {
		_, err := hubs[0].Invite("late", false, 0)
		invited <- err
	}()
	waitFor(t, 10*time.Second, "the bucket's refusal of the new credential", func() bool {
		return said("sharing the credential of host late with the other hubs")
	})
	if _, ok := hubs[1].auth.credential("late"); ok {
		t.Fatal("the bucket took a key over its limit: the test shows nothing")
	}
	select {
	case err := <-invited:
		t.Fatalf("the invite answered while the bucket refused its credential: %v", err)
	default:
	}
	if _, ok := hubs[0].auth.credential("late"); !ok {
		t.Fatal("the hub that made the credential lost it while the bucket refused it")
	}
	full(false)
	select {
	case err := <-invited:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the invite still waits after the bucket was emptied")
	}
	waitFor(t, 10*time.Second, "the refused credential shared with the other hubs", func() bool {
		_, ok1 := hubs[1].auth.credential("late")
		_, ok2 := hubs[2].auth.credential("late")
		return ok1 && ok2
	})
	if _, ok := hubs[1].auth.credential("never"); ok {
		t.Error("a credential forgotten on its hub reached the others")
	}
}

// joinAdmin joins the three hubs' cluster as its admin, once its
// JetStream is ready (replicas 0: the fleet's default); the member is
// closed at the test's end.
func joinAdmin(t *testing.T, hubs []*Hub, replicas int) *Member {
	t.Helper()
	var admin *Member
	waitFor(t, 20*time.Second, "the cluster's JetStream ready", func() bool {
		m, err := Join(context.Background(), MemberOptions{Name: "admin", URLs: []string{hubs[0].URL(), hubs[1].URL(), hubs[2].URL()},
			Token: hubs[0].AdminToken(), Admin: true, Replicas: replicas})
		if err != nil {
			return false
		}
		admin = m
		return true
	})
	t.Cleanup(func() { admin.Close(false) })
	return admin
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
