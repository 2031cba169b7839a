package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-dev/corral/internal/api"
)

// rawHost connects with a host's own credential from a client of its
// own, as a hostile host would: no Member, none of its own limits.
func rawHost(t *testing.T, f *testFleet, name string, control bool) (*nats.Conn, jetstream.JetStream, string) {
	t.Helper()
	tok, err := f.hub.Invite(name, control, 0)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(f.hub.URL(), nats.Token(tok), nats.Name(clientNamePrefix+name), nats.CustomInboxPrefix(InboxPrefix(name)),
		nats.NoReconnect(), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js, tok
}

// stored is what a stream holds: its bytes, and its messages on the
// subjects matching filter.
func stored(t *testing.T, f *testFleet, stream, filter string) (bytes uint64, msgs uint64) {
	t.Helper()
	st, err := f.hm.js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background(), jetstream.WithSubjectFilter(filter))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range info.State.Subjects {
		msgs += n
	}
	return info.State.Bytes, msgs
}

func lastSeq(t *testing.T, f *testFleet) uint64 {
	t.Helper()
	st, err := f.hm.js.Stream(context.Background(), "KV_"+PanesBucket)
	if err != nil {
		t.Fatal(err)
	}
	return st.CachedInfo().State.LastSeq
}

// hostileHostIsBounded (TestApart): a host's own credential (observe-only, and
// one that may command) used by a client of its own cannot store an
// oversized record or event, keeps only its last MaxHostEvents events,
// and is cut off when it writes more records than its quota: refused for
// a while, its records removed. Meanwhile another host's heartbeat and
// states keep flowing, and a view lists it at once.
func hostileHostIsBounded(t *testing.T) {
	f := startFleet(t, "127.0.0.1:0")
	waitFor(t, 5*time.Second, "the hub follows the pane bucket", func() bool { return f.hub.keeper.following.Load() })
	lg := newFakeLocal("g1")
	f.join("g", lg, 0)
	viewer := f.join("v", newFakeLocal(), 0)
	waitFor(t, 5*time.Second, "v sees g:g1", func() bool { return paneState(viewer, "g", "g1") == "idle" })
	ctx := context.Background()

	for i, tc := range []struct {
		host    string
		control bool
		size    int // of each record of the flood
		records int
	}{
		{"o", false, 60 << 10, 1000}, // over the quota's bytes
		{"x", true, 100, 3000},       // over its records
	} {
		nc, js, tok := rawHost(t, f, tc.host, tc.control)
		if _, err := js.Publish(ctx, panesPrefix+tc.host+".big", make([]byte, MaxRecord+1)); err == nil {
			t.Fatalf("%s stored a record of %d bytes", tc.host, MaxRecord+1)
		}
		if _, err := js.Publish(ctx, subjEvents+tc.host, make([]byte, MaxEvent+1)); err == nil {
			t.Fatalf("%s stored an event of %d bytes", tc.host, MaxEvent+1)
		}
		if i == 0 {
			// More events than the stream keeps of one host: it keeps
			// the host's last ones, and no other host's go.
			for n := 0; n < MaxHostEvents+200; n++ {
				if _, err := js.PublishAsync(subjEvents+tc.host, []byte(`{}`)); err != nil {
					t.Fatal(err)
				}
				if n%1000 == 999 {
					select {
					case <-js.PublishAsyncComplete():
					case <-time.After(30 * time.Second):
						t.Fatal("the events were not acknowledged")
					}
				}
			}
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(30 * time.Second):
				t.Fatal("the events were not acknowledged")
			}
			if _, n := stored(t, f, EventsStream, subjEvents+tc.host); n > MaxHostEvents {
				t.Fatalf("the stream keeps %d events of %s", n, tc.host)
			}
		}

		// The flood, as fast as the connection takes it.
		first := lastSeq(t, f)
		value := make([]byte, tc.size)
		sent := 0
		for ; sent < tc.records && !nc.IsClosed(); sent++ {
			if _, err := js.PublishAsync(fmt.Sprintf("%s%s.r%d", panesPrefix, tc.host, sent), value); err != nil {
				break
			}
		}
		waitFor(t, 10*time.Second, tc.host+" cut off", func() bool { return nc.IsClosed() })
		waitFor(t, 10*time.Second, tc.host+"'s records removed", func() bool {
			_, n := stored(t, f, "KV_"+PanesBucket, panesPrefix+tc.host+".>")
			return n == 0
		})
		// What the bucket took meanwhile (other hosts' few records and
		// the hub's markers included).
		took := int(lastSeq(t, f) - first)
		t.Logf("%s sent %d records of %d bytes; the bucket took %d before it was cut off", tc.host, sent, tc.size, took)
		// A host stores its quota and what it sends while the hub reacts,
		// never more than the bucket holds.
		if took*(tc.size+100) > panesBytes {
			t.Fatalf("%s stored %d records of %d bytes", tc.host, took, tc.size)
		}
		if b, _ := stored(t, f, "KV_"+PanesBucket, ">"); b > 1<<20 {
			t.Fatalf("the pane bucket holds %d KiB after %s was cut off", b>>10, tc.host)
		}
		// Refused for a while.
		if _, err := nats.Connect(f.hub.URL(), nats.Token(tok), nats.Name(clientNamePrefix+tc.host)); err == nil {
			t.Fatalf("%s reconnected at once after it was cut off", tc.host)
		}
		if _, why := f.hub.Refused(); !strings.Contains(why, "quota") {
			t.Fatalf("refused %s: %s", tc.host, why)
		}

		// The other hosts kept going: g's heartbeat is fresh, its change
		// comes through, and a view lists it at once.
		if r, _ := hostReachable(f.hm, "g"); !r {
			t.Fatalf("g unreachable after %s's flood", tc.host)
		}
		state := []string{"working", "blocked"}[i]
		lg.set("g1", state)
		waitFor(t, 5*time.Second, "v sees g:g1 "+state, func() bool { return paneState(viewer, "g", "g1") == state })
		start := time.Now()
		panes, hosts := viewer.Panes(), viewer.Hosts()
		if d := time.Since(start); d > 50*time.Millisecond {
			t.Fatalf("listing took %v", d)
		}
		for _, p := range panes {
			if p.Host == tc.host {
				t.Fatalf("v lists %s:%s", p.Host, p.ID)
			}
		}
		if len(hosts) == 0 {
			t.Fatal("v lists no host")
		}
	}
	if n := f.hub.keeper.cutOffs.Load(); n != 2 {
		t.Fatalf("%d hosts cut off, want 2", n)
	}
}

// TestRevokeRemovesRecords: revoking a host removes what it wrote, its
// panes, heartbeat and events, from the store, and every view forgets it.
func TestRevokeRemovesRecords(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	g := f.join("g", newFakeLocal("g1"), 0)
	tok, err := f.hub.Invite("o", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	lo := newFakeLocal("o1", "o2")
	o, err := Join(context.Background(), MemberOptions{Name: "o", URLs: []string{f.hub.URL()}, Token: tok, Local: lo, Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close(false)
	for i := 0; i < 20; i++ {
		lo.set("o1", []string{"working", "idle"}[i%2])
	}
	waitFor(t, 5*time.Second, "g and the hub see o", func() bool {
		r, _ := hostReachable(g, "o")
		return r && paneState(g, "o", "o1") == "idle" && paneState(f.hm, "o", "o2") == "idle" && o.Stats().Published == 22
	})
	// And records of its own making, within its quota, written after o's
	// first sync (which deletes keys of panes it does not have).
	for i := 0; i < 50; i++ {
		if _, err := o.js.Publish(context.Background(), fmt.Sprintf("%so.junk%d", panesPrefix, i), make([]byte, 10<<10)); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := stored(t, f, "KV_"+PanesBucket, ">")

	if err := f.hub.Revoke("o"); err != nil {
		t.Fatal(err)
	}
	if _, n := stored(t, f, "KV_"+PanesBucket, panesPrefix+"o.>"); n != 0 {
		t.Fatalf("%d of o's records stay in the pane bucket", n)
	}
	if after, _ := stored(t, f, "KV_"+PanesBucket, ">"); before-after < 400<<10 {
		t.Fatalf("the pane bucket went from %d to %d bytes", before, after)
	}
	if _, err := f.hm.hosts.Get(context.Background(), "o"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("o's heartbeat: %v", err)
	}
	if _, n := stored(t, f, EventsStream, subjEvents+"o"); n != 0 {
		t.Fatalf("%d of o's events stay in the stream", n)
	}
	for _, m := range []*Member{g, f.hm} {
		waitFor(t, 5*time.Second, m.Name()+" forgets o", func() bool {
			_, listed := hostReachable(m, "o")
			_, p1 := m.PaneOf("o", "o1")
			_, p2 := m.PaneOf("o", "o2")
			return !listed && !p1 && !p2
		})
	}
	// It stays out: its member's reconnections are refused.
	waitFor(t, 5*time.Second, "o disconnected", func() bool { return !o.nc.IsConnected() })
	if _, n := stored(t, f, "KV_"+PanesBucket, panesPrefix+"o.>"); n != 0 {
		t.Fatalf("o wrote %d records after it was revoked", n)
	}
}

// viewSkipsBadRecords (TestApart): a view skips and counts a record bigger than
// MaxRecord (as a bucket an older hub made could hold) or malformed,
// unread; the good ones are listed, at once.
func viewSkipsBadRecords(t *testing.T) {
	f := startFleet(t, "127.0.0.1:0")
	a := f.join("a", newFakeLocal("a1"), 0)
	ctx := context.Background()
	cfg := bucketConfigs(1)[0]
	cfg.MaxValueSize = MaxMessage
	if _, err := f.hm.js.UpdateKeyValue(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	before := a.view.bad.Load()
	// 200 well-formed records of 100 KB, of 20 hosts, and a malformed one.
	const hosts, each = 20, 10
	for h := 0; h < hosts; h++ {
		for p := 0; p < each; p++ {
			rec := PaneRecord{Host: fmt.Sprintf("h%d", h), Pane: api.Pane{ID: fmt.Sprintf("p%d", p), State: "idle",
				Message: strings.Repeat("x", 100<<10)}, Sent: time.Now().UTC()}
			b, _ := json.Marshal(rec)
			if _, err := f.hm.panes.Put(ctx, rec.Host+"."+rec.ID, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := f.hm.panes.Put(ctx, "h0.zz", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the bad records counted", func() bool { return a.view.bad.Load() >= before+hosts*each+1 })
	start := time.Now()
	panes := a.Panes()
	b, _ := json.Marshal(panes)
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Fatalf("listing took %v", d)
	}
	if len(b) > 64<<10 {
		t.Fatalf("the listing takes %d KiB", len(b)>>10)
	}
	for _, p := range panes {
		if strings.HasPrefix(p.Host, "h") {
			t.Fatalf("a lists %s:%s", p.Host, p.ID)
		}
	}
	if paneState(a, "a", "a1") != "idle" {
		t.Fatal("a's own pane is not listed")
	}
}

// TestKeeperSweepsMarkers: the markers of removed panes count in their
// host's quota until the hub sweeps them; the live records stay.
func TestKeeperSweepsMarkers(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	waitFor(t, 5*time.Second, "the hub follows the pane bucket", func() bool { return f.hub.keeper.following.Load() })
	ctx := context.Background()
	// A heartbeat for s: the hub forgets a host whose records have none at
	// its second look in a row (2-4 s), before the keeper's count below
	// under a loaded run (it timed out so once).
	hb, _ := json.Marshal(Heartbeat{Host: "s", Sent: time.Now().UTC()})
	if _, err := f.hm.hosts.Put(ctx, "s", hb); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if _, err := f.hm.panes.Put(ctx, fmt.Sprintf("s.p%d", i), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 6; i++ {
		if err := f.hm.panes.Delete(ctx, fmt.Sprintf("s.p%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// The keeper follows the bucket behind the writes: 4 records alone
	// are also its count of the first 4 puts, when it has no marker yet.
	waitFor(t, 5*time.Second, "the keeper counts 4 records and 6 markers", func() bool {
		k := f.hub.keeper
		k.mu.Lock()
		defer k.mu.Unlock()
		markers := 0
		if u := k.hosts["s"]; u != nil {
			for _, use := range u.keys {
				if use.deleted {
					markers++
				}
			}
			return u.records == 4 && markers == 6
		}
		return false
	})
	if _, n := stored(t, f, "KV_"+PanesBucket, panesPrefix+"s.>"); n != 10 {
		t.Fatalf("%d messages of s before the sweep, want 4 records and 6 markers", n)
	}
	_, withMarkers := f.hub.keeper.usage("s")
	f.hub.keeper.sweep(time.Now().Add(time.Second))
	if _, n := stored(t, f, "KV_"+PanesBucket, panesPrefix+"s.>"); n != 4 {
		t.Fatalf("%d messages of s after the sweep, want its 4 records", n)
	}
	r, b := f.hub.keeper.usage("s")
	if r != 4 || b >= withMarkers {
		t.Fatalf("after the sweep: %d records, %d bytes (%d before)", r, b, withMarkers)
	}
	for i := 6; i < 10; i++ {
		if _, err := f.hm.panes.Get(ctx, fmt.Sprintf("s.p%d", i)); err != nil {
			t.Fatalf("s.p%d: %v", i, err)
		}
	}
}

// TestFitPane: a pane whose free text is too long for a record is
// published shortened; its identity stays whole.
func TestFitPane(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 100<<10)
	cmd := []string{"claude", "-p", long}
	p := api.Pane{ID: "p1", Name: "n", State: "blocked", Message: long, Command: cmd,
		Approval: &api.Approval{Tool: "Write", Input: long}, Records: make([]api.Record, 500)}
	b, err := fitPane(PaneRecord{Host: "h", Pane: p})
	if err != nil {
		t.Fatal(err)
	}
	var rec PaneRecord
	if len(b) > MaxRecord || json.Unmarshal(b, &rec) != nil || rec.ID != "p1" || rec.State != "blocked" || !strings.HasPrefix(rec.Message, "éé") {
		t.Fatalf("%d bytes: %.200s", len(b), b)
	}
	if cmd[2] != long || p.Approval.Input != long {
		t.Fatal("the daemon's pane was changed")
	}
	ev, err := fitEvent(Event{Host: "h", Event: eventlogEvent(1, "p1", "blocked")})
	if err != nil || len(ev) > maxEventData {
		t.Fatalf("%d bytes: %v", len(ev), err)
	}
	e := Event{Host: "h", Event: eventlogEvent(2, "p1", "blocked")}
	e.Message = long
	if ev, err = fitEvent(e); err != nil || len(ev) > maxEventData {
		t.Fatalf("%d bytes: %v", len(ev), err)
	}
}

// TestHubRecoversAFilledStore: the buckets and streams of an older hub
// (no quota, values up to 1 MB), one host's records filling them, then
// this hub started over them: the fleet's limits replace theirs, and the
// hub removes the records of the host over its quota — again after a
// removal that failed (before, a failed one was never tried again: no
// record of that host came to start another).
func TestHubRecoversAFilledStore(t *testing.T) {
	t.Parallel()
	for _, failed := range []int32{0, 2} {
		t.Run(fmt.Sprintf("%d removals failed", failed), func(t *testing.T) {
			t.Parallel()
			hubRecoversAFilledStore(t, failed)
		})
	}
}

func hubRecoversAFilledStore(t *testing.T, failed int32) {
	dir := t.TempDir()
	// The older hub's store is filled before this hub starts, as it would
	// be: a keeper following the bucket while it fills takes each record
	// over MaxRecord as one its bucket refuses, and the test would
	// depend on whether the keeper read the bucket before or after.
	old, err := StartHub(HubOptions{Dir: dir, Listen: "127.0.0.1:0", ServerName: "hub"})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	connect := func(h *Hub) (*nats.Conn, jetstream.JetStream) {
		nc, err := nats.Connect(h.URL(), nats.Token(h.AdminToken()))
		if err != nil {
			t.Fatal(err)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return nc, js
	}
	nc, js := connect(old)
	ctx := context.Background()
	for _, b := range []string{PanesBucket, HostsBucket} {
		if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b, History: 1, MaxValueSize: MaxMessage, Storage: jetstream.FileStorage}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []jetstream.StreamConfig{
		{Name: EventsStream, Subjects: []string{subjEvents + "*"}, MaxAge: 7 * 24 * time.Hour, MaxBytes: 256 << 20, MaxMsgSize: MaxMessage},
		{Name: JobsStream, Subjects: []string{"corral.jobs.>"}, Retention: jetstream.WorkQueuePolicy, MaxAge: 24 * time.Hour, MaxMsgSize: MaxMessage},
		{Name: OutputStream, Subjects: []string{subjJobOut + ">"}, MaxAge: time.Hour, MaxBytes: 256 << 20, MaxMsgSize: MaxMessage},
	} {
		if _, err := js.CreateStream(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	panes, err := js.KeyValue(ctx, PanesBucket)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if _, err := panes.Put(ctx, fmt.Sprintf("o.big%d", i), make([]byte, 500<<10)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := panes.Put(ctx, "g.p1", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	old.Close()

	var tries atomic.Int32
	h, err := StartHub(HubOptions{Dir: dir, Listen: "127.0.0.1:0", ServerName: "hub", Logf: t.Logf,
		cutFails: func(host string) bool { return host == "o" && tries.Add(1) <= failed }})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	nc, js = connect(h)
	defer nc.Close()
	if panes, err = js.KeyValue(ctx, PanesBucket); err != nil {
		t.Fatal(err)
	}
	if err := EnsureStreams(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	if st, err := panes.Status(ctx); err != nil || st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.MaxMsgSize != MaxRecord {
		t.Fatalf("the pane bucket's limits: %v", err)
	}
	waitFor(t, 10*time.Second, "o's records removed, g's kept", func() bool {
		st, err := js.Stream(ctx, "KV_"+PanesBucket)
		if err != nil {
			return false
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(">"))
		return err == nil && len(info.State.Subjects) == 1 && info.State.Subjects[panesPrefix+"g.p1"] == 1
	})
}

// TestHonestHostStaysWithinQuota: a member with more panes than its
// quota takes publishes as many as fit, says so, and is not cut off.
func TestHonestHostStaysWithinQuota(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	waitFor(t, 5*time.Second, "the hub follows the pane bucket", func() bool { return f.hub.keeper.following.Load() })
	ids := make([]string, MaxHostRecords+50)
	for i := range ids {
		ids[i] = fmt.Sprintf("p%d", i)
	}
	m := f.join("busy", newFakeLocal(ids...), 0)
	count := func() int {
		n := 0
		for _, p := range f.hm.Panes() {
			if p.Host == "busy" {
				n++
			}
		}
		return n
	}
	waitFor(t, 20*time.Second, "the hub sees as many of busy's panes as fit", func() bool { return count() == hostPanes })
	// The member says so at the first pane with no room, which it may
	// come to after the hub has seen the panes that fit.
	waitFor(t, 10*time.Second, "busy to say its quota is full", func() bool { return strings.Contains(m.Stats().LastError, "quota") })
	records, bytes := f.hub.keeper.usage("busy")
	if records > MaxHostRecords || bytes > MaxHostBytes || f.hub.keeper.cutOffs.Load() != 0 || !m.nc.IsConnected() {
		t.Fatalf("busy: %d records, %d bytes, cut off %d times, connected %v", records, bytes, f.hub.keeper.cutOffs.Load(), m.nc.IsConnected())
	}
	t.Logf("busy keeps %d records, %d KiB", records, bytes>>10)
}
