package fleet

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-dev/corral/internal/proctest"
)

// hostShown says whether a member's view has a host, or any of its panes.
func hostShown(m *Member, host string) bool {
	if _, ok := hostReachable(m, host); ok {
		return true
	}
	for _, p := range m.Panes() {
		if p.Host == host {
			return true
		}
	}
	return false
}

func (f *testFleet) joinAs(name, hostID, token string, local Local) *Member {
	f.t.Helper()
	m, err := Join(context.Background(), MemberOptions{Name: name, HostID: hostID, URLs: []string{f.hub.URL()}, Token: token,
		CAFingerprint: f.hub.Fingerprint(), Local: local, Watch: true, Version: "test"})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { m.Close(false) })
	return m
}

func hostsComeAndGo(t *testing.T) {
	t.Parallel()
	// The cases, each with a fleet of its own, run at once in this test's
	// slot: as parallel subtests they would queue behind every other test
	// waiting for one and end the package's run last. Under -race (CI runs
	// it two tests at a time) one after another, as -parallel means.
	var wg sync.WaitGroup
	defer wg.Wait()
	sub := func(name string, f func(t *testing.T)) { wg.Go(func() { t.Run(name, f) }) }
	if proctest.Race {
		sub = func(name string, f func(t *testing.T)) { t.Run(name, f) }
	}
	sub("forget", func(t *testing.T) {
		f := startFleet(t, "127.0.0.1:0")
		a := f.joinAs("a", "", f.hub.FleetToken(), newFakeLocal("p1"))
		waitFor(t, 5*time.Second, "a:p1 on the hub", func() bool { return paneState(f.hm, "a", "p1") == "idle" })
		if err := f.hub.Forget("a"); err == nil || !strings.Contains(err.Error(), "--revoke") {
			t.Fatalf("forgetting a connected host: %v", err)
		}
		if err := f.hub.Forget("hub"); err == nil {
			t.Fatal("the hub forgot its own host")
		}
		// A host forgotten while connected (as when it was away, and is
		// back) sends its panes again.
		forgot := time.Now()
		if err := f.hub.forget("a", false); err != nil {
			t.Fatal(err)
		}
		hosts, err := f.hub.keeper.js.KeyValue(context.Background(), HostsBucket)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "a:p1 sent again, after it was forgotten", func() bool {
			// a's heartbeat in the bucket, now that forget has returned:
			// the view may have shown one written while forget ran, which
			// forget then removed, and a closed before its next one would
			// be a host with records and no heartbeat (forgotten, gone).
			if e, err := hosts.Get(context.Background(), "a"); err != nil || e.Operation() != jetstream.KeyValuePut {
				return false
			}
			f.hm.view.mu.Lock()
			defer f.hm.view.mu.Unlock()
			p, ok := f.hm.view.panes["a.p1"]
			h := f.hm.view.hosts["a"]
			return ok && p.created.After(forgot) && h != nil && h.seen.After(forgot)
		})
		a.Close(false)
		waitFor(t, 10*time.Second, "a unreachable, for a while", func() bool {
			for _, h := range f.hm.Hosts() {
				if h.Host == "a" {
					return !h.Reachable && h.UnreachableFor >= 1
				}
			}
			return false
		})
		if err := f.hub.Forget("a"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "a gone from the hub's view", func() bool { return !hostShown(f.hm, "a") })
	})
	sub("records without a heartbeat", func(t *testing.T) {
		// What a host forgotten while connected left when it went after
		// writing its panes again and before its next heartbeat.
		f := startFleet(t, "127.0.0.1:0")
		a := f.joinAs("a", "", f.hub.FleetToken(), newFakeLocal("p1"))
		waitFor(t, 5*time.Second, "a:p1 on the hub", func() bool { return paneState(f.hm, "a", "p1") == "idle" })
		a.Close(false)
		ctx := context.Background()
		hosts, err := f.hub.keeper.js.KeyValue(ctx, HostsBucket)
		if err != nil {
			t.Fatal(err)
		}
		if err := hosts.Purge(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		panes, err := f.hub.keeper.js.KeyValue(ctx, PanesBucket)
		if err != nil {
			t.Fatal(err)
		}
		rec := PaneRecord{Host: "a", Sent: time.Now().UTC()}
		rec.ID, rec.State = "p2", "idle"
		b, _ := json.Marshal(rec)
		if _, err := panes.Put(ctx, "a.p2", b); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "a:p2 on the hub", func() bool { return paneState(f.hm, "a", "p2") == "idle" })
		waitFor(t, 15*time.Second, "a forgotten", func() bool { return !hostShown(f.hm, "a") })
		if _, err := panes.Get(ctx, "a.p2"); err == nil {
			t.Fatal("a's record is still in the bucket")
		}
	})
	sub("a machine joins again under another name", func(t *testing.T) {
		f := startFleet(t, "127.0.0.1:0")
		watcher := f.joinAs("w", "w-id", f.hub.FleetToken(), newFakeLocal())
		old := f.joinAs("old", "same-machine", f.hub.FleetToken(), newFakeLocal("p1"))
		waitFor(t, 5*time.Second, "old:p1 seen", func() bool { return paneState(watcher, "old", "p1") == "idle" })
		old.Close(false)
		f.joinAs("new", "same-machine", f.hub.FleetToken(), newFakeLocal("p1"))
		waitFor(t, 10*time.Second, "the machine's panes once, under its new name", func() bool {
			return paneState(watcher, "new", "p1") == "idle" && !hostShown(watcher, "old") && !hostShown(f.hm, "old")
		})
	})
	sub("unreachable longer than ForgetAfter", func(t *testing.T) {
		f := startFleetWith(t, HubOptions{Listen: "127.0.0.1:0", ForgetAfter: 2 * time.Second})
		a := f.joinAs("a", "", f.hub.FleetToken(), newFakeLocal("p1"))
		b := f.joinAs("b", "", f.hub.FleetToken(), newFakeLocal("q1"))
		waitFor(t, 5*time.Second, "a:p1 on the hub", func() bool { return paneState(f.hm, "a", "p1") == "idle" })
		a.Close(false)
		waitFor(t, 15*time.Second, "a forgotten", func() bool { return !hostShown(f.hm, "a") && !hostShown(b, "a") })
		if paneState(f.hm, "b", "q1") != "idle" {
			t.Fatal("a reachable host was forgotten too")
		}
	})
	sub("revoked", func(t *testing.T) {
		f := startFleet(t, "127.0.0.1:0")
		tok, err := f.hub.Invite("r", true, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.joinAs("r", "", tok, newFakeLocal("p1"))
		waitFor(t, 5*time.Second, "r:p1 on the hub", func() bool { return paneState(f.hm, "r", "p1") == "idle" })
		if err := f.hub.Revoke("r"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "r gone from the hub's view", func() bool { return !hostShown(f.hm, "r") })
	})
	sub("credential expired", func(t *testing.T) {
		f := startFleet(t, "127.0.0.1:0")
		tok, err := f.hub.Invite("e", true, 4*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		e, err := Join(context.Background(), MemberOptions{Name: "e", URLs: []string{f.hub.URL()}, Token: tok, Local: newFakeLocal("p1")})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close(false)
		waitFor(t, 5*time.Second, "e:p1 on the hub", func() bool { return paneState(f.hm, "e", "p1") == "idle" })
		waitFor(t, 15*time.Second, "e forgotten at its credential's expiry", func() bool { return !hostShown(f.hm, "e") })
	})
}

func TestPaneFilter(t *testing.T) {
	t.Parallel()
	rec := func(host, state string) PaneRecord {
		r := PaneRecord{Host: host}
		r.State = state
		return r
	}
	for _, tc := range []struct {
		name string
		f    PaneFilter
		p    PaneRecord
		keep bool
	}{
		{"no filter", PaneFilter{}, rec("a", "idle"), true},
		{"host", PaneFilter{Hosts: []string{"a"}}, rec("a", "idle"), true},
		{"other host", PaneFilter{Hosts: []string{"a"}}, rec("b", "idle"), false},
		{"glob", PaneFilter{Hosts: []string{"web-*"}}, rec("web-2", "idle"), true},
		{"glob misses", PaneFilter{Hosts: []string{"web-*"}}, rec("db-1", "idle"), false},
		{"one of several", PaneFilter{Hosts: []string{"db-?", "web-*"}}, rec("db-1", "idle"), true},
		{"malformed glob as text", PaneFilter{Hosts: []string{"web-["}}, rec("web-[", "idle"), true},
		{"state", PaneFilter{States: []string{"blocked"}}, rec("a", "blocked"), true},
		{"other state", PaneFilter{States: []string{"blocked"}}, rec("a", "idle"), false},
		{"host and state", PaneFilter{Hosts: []string{"a"}, States: []string{"blocked", "error"}}, rec("a", "error"), true},
		{"host but not state", PaneFilter{Hosts: []string{"a"}, States: []string{"blocked"}}, rec("a", "idle"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.Keep(tc.p); got != tc.keep {
				t.Fatalf("Keep(%s %s) = %v, want %v", tc.p.Host, tc.p.State, got, tc.keep)
			}
		})
	}
}

// A heartbeat a new watch replays counts from when it was written: a host
// that stopped before the view was made reads unreachable Unreachable after
// its last heartbeat, not Unreachable after the view saw it (as after a hub
// went away and every watcher was made again).
func TestReplayedHeartbeatKeepsItsAge(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	b := f.joinAs("b", "", f.hub.FleetToken(), newFakeLocal("p1"))
	waitFor(t, 5*time.Second, "b reachable on the hub", func() bool { r, _ := hostReachable(f.hm, "b"); return r })
	b.nc.Close() // as if its daemon died: no goodbye
	b.cancel()
	stopped := time.Now()
	// b's last heartbeat, as the hub saw it come, a second old.
	var last time.Time
	waitFor(t, 5*time.Second, "b's last heartbeat a second old on the hub", func() bool {
		f.hm.view.mu.Lock()
		defer f.hm.view.mu.Unlock()
		last = f.hm.view.hosts["b"].seen
		return time.Since(last) > time.Second
	})
	v := f.joinAs("v", "", f.hub.FleetToken(), newFakeLocal())
	// b's panes can show in v's view before its heartbeat does.
	var seen time.Time
	waitFor(t, 5*time.Second, "b's heartbeat in v's view", func() bool {
		v.view.mu.Lock()
		defer v.view.mu.Unlock()
		if h := v.view.hosts["b"]; h != nil {
			seen = h.seen
			return true
		}
		return false
	})
	if seen.Sub(last) > 500*time.Millisecond {
		t.Fatalf("b's replayed heartbeat counts as seen %v after the hub saw it come; it was written then", seen.Sub(last).Round(time.Millisecond))
	}
	waitFor(t, 5*time.Second, "b unreachable in v's view", func() bool { r, ok := hostReachable(v, "b"); return ok && !r })
	if took := time.Since(stopped); took > Unreachable+time.Second {
		t.Errorf("b read reachable %v after it stopped (its heartbeats came every %v; Unreachable is %v)", took.Round(time.Millisecond), HeartbeatEvery, Unreachable)
	}
}
