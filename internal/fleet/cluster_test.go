package fleet

import (
	"context"
	"net"
	"testing"
	"time"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Three hubs made the way the CLI makes them: the first alone, the
// others with the hub token (credentials and CA fetched from a running
// hub); routes over TLS; one hub goes and the fleet goes on, a host
// enrolled on one hub known to the others.
func TestHubClusterJoinHub(t *testing.T) {
	type node struct {
		dir string
		hub *Hub
		adm *Member
	}
	nodes := make([]*node, 3)
	start := func(i int, routes []string, replicas int) {
		n := nodes[i]
		h, err := StartHub(HubOptions{Dir: n.dir, Listen: "127.0.0.1:0", TLS: true, ServerName: []string{"h0", "h1", "h2"}[i],
			Cluster: &ClusterOptions{Listen: freeAddr(t), Routes: routes, Replicas: replicas}})
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
	// The fleet token (every member has it) gets nothing either.
	if _, err := FetchHubBundle(context.Background(), []string{first.URL()}, first.FleetToken(), first.Fingerprint()); err == nil {
		t.Fatal("the fleet token fetched the hub credentials")
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
	// JetStream in a cluster waits for a second server: the hubs' own
	// members join once there are two.
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
