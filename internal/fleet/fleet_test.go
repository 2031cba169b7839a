package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/proctest"
)

// The fleet's tests mostly wait on NATS servers and timers, not on a core.
func TestMain(m *testing.M) {
	// 4 a core. 8 made a -short run quicker (its tests wait on timers,
	// mostly: about 5 s of CPU in 20 s), but the whole run slower and its
	// hub clusters, started beside 15 others, missed their set-up's
	// deadlines (a NATS server not listening within 30 s). -short runs no
	// cluster, and its tests wait out a job's silence or the queue's ack
	// wait with the processor idle (3 s of CPU in 13.5 s at 6 a core): 20
	// a core there (9.7 s).
	flag.Parse()
	// A job's silence is waited out by a dozen tests: 2 s here, as the
	// race detector's slower runs keep the real 5 s. Hosts say "alive"
	// every fifth of it either way.
	if !proctest.Race {
		jobSilence = 2 * time.Second
	}
	perCore := 4
	if testing.Short() {
		perCore = 20
	}
	proctest.MoreParallel(perCore)
	os.Exit(m.Run())
}

// casesAtOnce runs a test's cases, each with a fleet of its own, at once
// in the test's slot: as parallel subtests they would queue behind every
// other test waiting for one, and the cases that wait out a fixed period
// (a job's silence, the queue's ack wait) would end the package's run last.
// Under -race (CI runs it two tests at a time) one after another, as
// -parallel means. A case must not call t.Parallel.
func casesAtOnce(t *testing.T) (run func(name string, f func(t *testing.T)), wait func()) {
	var wg sync.WaitGroup
	run = func(name string, f func(t *testing.T)) { wg.Go(func() { t.Run(name, f) }) }
	if proctest.Race {
		run = func(name string, f func(t *testing.T)) { t.Run(name, f) }
	}
	return run, wg.Wait
}

// clusterParallel runs a hub-cluster test in parallel but under -race: a
// JetStream cluster starved by the race detector and the other tests
// misses its elections' deadlines.
func clusterParallel(t *testing.T) {
	if !proctest.Race {
		t.Parallel()
	}
}

// fakeLocal is a daemon with panes whose states a test sets.
type fakeLocal struct {
	mu    sync.Mutex
	panes map[string]api.Pane
	order []string
	hub   *eventlog.Hub
	seq   uint64
	mux   *http.ServeMux
	// jobHang makes jobs run until killed.
	jobHang bool
	// jobExit makes jobs fail with this exit code.
	jobExit int
	killed  chan string
	// jobsStarted counts the jobs started here.
	jobsStarted atomic.Int32
}

func newFakeLocal(ids ...string) *fakeLocal {
	l := &fakeLocal{panes: map[string]api.Pane{}, hub: eventlog.NewHub(), mux: http.NewServeMux(), killed: make(chan string, 10)}
	for _, id := range ids {
		l.set(id, "idle")
	}
	l.mux.HandleFunc("GET /v1/panes/{id}", func(w http.ResponseWriter, r *http.Request) {
		if p, ok := l.Pane(r.PathValue("id")); ok {
			_ = json.NewEncoder(w).Encode(p)
			return
		}
		w.WriteHeader(404)
		_, _ = w.Write(apiError("not_found", "no pane named "+r.PathValue("id")))
	})
	l.mux.HandleFunc("POST /v1/panes/{id}/send", func(w http.ResponseWriter, r *http.Request) {
		p, _ := l.Pane(r.PathValue("id"))
		if p.State == "blocked" {
			w.WriteHeader(409)
			_, _ = w.Write(apiError("blocked", "pane is blocked"))
			return
		}
		_ = json.NewEncoder(w).Encode(p)
	})
	l.mux.HandleFunc("POST /v1/panes/{id}/kill", func(w http.ResponseWriter, r *http.Request) {
		l.killed <- r.PathValue("id")
		_, _ = w.Write([]byte("{}"))
	})
	l.mux.HandleFunc("POST /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		l.jobsStarted.Add(1)
		_ = json.NewEncoder(w).Encode(api.Pane{ID: "j1"})
	})
	l.mux.HandleFunc("GET /v1/jobs/{id}/stream", func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 3; i++ {
			fmt.Fprintf(w, `{"type":"assistant","text":"line %d"}`+"\n", i)
		}
		if l.jobHang {
			select {
			case <-r.Context().Done():
			case <-l.killed:
			}
			fmt.Fprintln(w, `{"type":"outcome","outcome":{"state":"error","reason":"killed","exit_code":143}}`)
			return
		}
		if l.jobExit != 0 {
			fmt.Fprintf(w, `{"type":"outcome","outcome":{"state":"error","reason":"it failed","exit_code":%d}}`+"\n", l.jobExit)
			return
		}
		fmt.Fprintln(w, `{"type":"outcome","outcome":{"state":"done","exit_code":0}}`)
	})
	return l
}

func (l *fakeLocal) set(id, state string) {
	l.mu.Lock()
	if _, ok := l.panes[id]; !ok {
		l.order = append(l.order, id)
	}
	l.panes[id] = api.Pane{ID: id, Name: "n-" + id, Agent: "claude-code", State: state, Since: time.Now().UTC().Format(eventlog.TimeFormat)}
	l.seq++
	ev := eventlog.Event{Seq: l.seq, Time: time.Now(), Pane: id, State: state}
	l.mu.Unlock()
	l.hub.Publish(ev)
}

func (l *fakeLocal) Handler() http.Handler { return l.mux }
func (l *fakeLocal) Panes() []api.Pane {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := []api.Pane{}
	for _, id := range l.order {
		out = append(out, l.panes[id])
	}
	return out
}
func (l *fakeLocal) Pane(id string) (api.Pane, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.panes[id]
	return p, ok
}
func (l *fakeLocal) Subscribe(after uint64) (<-chan eventlog.Event, []eventlog.Event, func()) {
	s, backlog := l.hub.Subscribe(after)
	return s.C, backlog, s.Close
}

// waitFor polls cond until it holds or d passes, stretched by waitSlack:
// the fleet's tests share two cores with the rest of the suite under
// -race (a view after a reconnection once took more than 5 s), and a wait
// only ends early.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	d *= waitSlack
	if !proctest.WaitFor(d, cond) {
		t.Fatalf("timed out after %v waiting for %s", d, what)
	}
}

const waitSlack = 3

type testFleet struct {
	t   *testing.T
	dir string
	hub *Hub
	hm  *Member // the hub's own member
	// ackWait, if set, replaces jobAckWait for the hosts joinWith joins:
	// a test whose hosts never hold a job message unacknowledged on
	// purpose (stopped, not stalled) waits less for its redelivery.
	ackWait time.Duration
}

func startFleet(t *testing.T, listen string) *testFleet {
	t.Helper()
	return startFleetWith(t, HubOptions{Listen: listen})
}

func startFleetWith(t *testing.T, o HubOptions) *testFleet {
	t.Helper()
	dir := t.TempDir()
	o.Dir, o.ServerName = dir, "hub"
	h, err := StartHub(o)
	if err != nil {
		t.Fatal(err)
	}
	f := &testFleet{t: t, dir: dir, hub: h}
	f.hm, err = Join(context.Background(), MemberOptions{Name: "hub", URLs: []string{h.URL()}, Token: h.AdminToken(),
		CAFingerprint: h.Fingerprint(), Admin: true, Watch: true, Local: newFakeLocal(), Enroll: h.Enroll, Unenroll: h.Revoke, Rights: h.HostRights})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.hm.Close(false)
		f.hub.Close()
	})
	return f
}

func (f *testFleet) join(name string, local Local, maxJobs int) *Member {
	f.t.Helper()
	m, err := Join(context.Background(), MemberOptions{Name: name, URLs: []string{f.hub.URL()}, Token: f.hub.FleetToken(),
		CAFingerprint: f.hub.Fingerprint(), Local: local, MaxJobs: maxJobs, Watch: true, Version: "test"})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { m.Close(false) })
	return m
}

func paneState(m *Member, host, id string) string {
	p, ok := m.PaneOf(host, id)
	if !ok {
		return ""
	}
	return p.State
}

func hostReachable(m *Member, host string) (bool, bool) {
	for _, h := range m.Hosts() {
		if h.Host == host {
			return h.Reachable, true
		}
	}
	return false, false
}

func TestFleetStatesCommandsAndReachability(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	la, lb := newFakeLocal("p1", "p2"), newFakeLocal("q1")
	a := f.join("a", la, 0)
	bm := f.join("b", lb, 0)
	waitFor(t, 5*time.Second, "both hosts' panes on the hub", func() bool {
		return paneState(f.hm, "a", "p1") == "idle" && paneState(f.hm, "a", "p2") == "idle" && paneState(f.hm, "b", "q1") == "idle"
	})
	// A change on one host is seen on another.
	la.set("p1", "blocked")
	waitFor(t, 5*time.Second, "a:p1 blocked, seen from b", func() bool { return paneState(a, "a", "p1") == "blocked" })
	// Commands carry the host's own guards and answers.
	status, body, err := f.hm.Request(context.Background(), "a", "POST", "/v1/panes/p1/send", []byte(`{"text":"x"}`))
	if err != nil || status != 409 || !strings.Contains(string(body), `"blocked"`) {
		t.Fatalf("send to a blocked pane: %d %s %v", status, body, err)
	}
	status, body, err = f.hm.Request(context.Background(), "b", "GET", "/v1/panes/q1", nil)
	if err != nil || status != 200 || !strings.Contains(string(body), `"q1"`) {
		t.Fatalf("get b:q1: %d %s %v", status, body, err)
	}
	if _, _, err := f.hm.Request(context.Background(), "b", "POST", "/v1/shutdown", nil); err == nil {
		t.Fatal("a shutdown was sent to another host")
	}
	if _, _, err := f.hm.Request(context.Background(), "nobody", "GET", "/v1/panes", nil); err == nil || !strings.Contains(err.Error(), "no such host") {
		t.Fatalf("a host that is not there: %v", err)
	}
	// A removed pane leaves the fleet's view.
	la.mu.Lock()
	delete(la.panes, "p2")
	la.seq++
	ev := eventlog.Event{Seq: la.seq, Pane: "p2", State: "removed"}
	la.mu.Unlock()
	la.hub.Publish(ev)
	waitFor(t, 5*time.Second, "a:p2 gone", func() bool { return paneState(f.hm, "a", "p2") == "" })
	// A host that stops: unreachable within 5 s.
	waitFor(t, 5*time.Second, "b reachable", func() bool { r, _ := hostReachable(f.hm, "b"); return r })
	start := time.Now()
	bm.nc.Close() // as if its daemon died: no goodbye
	bm.cancel()
	waitFor(t, 5*time.Second, "b unreachable", func() bool { r, ok := hostReachable(f.hm, "b"); return ok && !r })
	t.Logf("b shown unreachable %v after it stopped", time.Since(start).Round(time.Millisecond))
}

func TestFleetRefusesBadInput(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	url := f.hub.URL()
	// A wrong token.
	_, err := Join(context.Background(), MemberOptions{Name: "x", URLs: []string{url}, Token: "cft_wrong", Local: newFakeLocal()})
	if err == nil || !strings.Contains(err.Error(), "refused this host's credential") {
		t.Fatalf("wrong token: %v", err)
	}
	// A host's own credential works, under its own name only, until revoked.
	tok, err := f.hub.Invite("c", true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Join(context.Background(), MemberOptions{Name: "d", URLs: []string{url}, Token: tok}); err == nil {
		t.Fatal("c's credential joined as d")
	}
	c, err := Join(context.Background(), MemberOptions{Name: "c", URLs: []string{url}, Token: tok, Local: newFakeLocal("r1")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(false)
	// The fleet token cannot take a name that has its own credential.
	if _, err := Join(context.Background(), MemberOptions{Name: "c", URLs: []string{url}, Token: f.hub.FleetToken()}); err == nil {
		t.Fatal("the fleet token took c's name")
	}
	// A message on a subject the host may not use is refused by the server:
	// each refusal is the server's word (a permissions violation counted),
	// never a timeout taken for one.
	checks := []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"publish another host's event", func(ctx context.Context) error {
			_, err := c.js.Publish(ctx, subjEvents+"hub", []byte(`{}`))
			return err
		}},
		{"write another host's pane", func(ctx context.Context) error {
			_, err := c.panes.Put(ctx, "hub.p1", []byte(`{}`))
			return err
		}},
		{"write another host's heartbeat", func(ctx context.Context) error {
			_, err := c.hosts.Put(ctx, "hub", []byte(`{}`))
			return err
		}},
		{"take another host's commands", func(ctx context.Context) error {
			sub, err := c.nc.SubscribeSync(subjCmd + "hub")
			if err != nil {
				return err
			}
			_, err = sub.NextMsgWithContext(ctx)
			return err
		}},
	}
	// All at once: each waits out its 1 s for the answer that never comes.
	refused := c.Stats().RefusedOut
	var wg sync.WaitGroup
	for _, tc := range checks {
		wg.Go(func() {
			t.Run(tc.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				if err := tc.do(ctx); err == nil {
					t.Fatal("accepted")
				}
			})
		})
	}
	wg.Wait()
	waitFor(t, 5*time.Second, "the server's refusal of each", func() bool { return c.Stats().RefusedOut >= refused+int64(len(checks)) })
	t.Run("an oversized message", func(t *testing.T) {
		if err := c.nc.Publish(subjEvents+"c", make([]byte, MaxMessage+1)); !errors.Is(err, nats.ErrMaxPayload) {
			t.Fatalf("an oversized message: %v", err)
		}
	})
	waitFor(t, 3*time.Second, "the refusals counted", func() bool { return c.Stats().RefusedOut >= 2 })
	// An observe-only credential may not command others.
	otok, _ := f.hub.Invite("o", false, 0)
	o, err := Join(context.Background(), MemberOptions{Name: "o", URLs: []string{url}, Token: otok})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close(false)
	if _, _, err := o.Request(context.Background(), "c", "GET", "/v1/panes/r1", nil); err == nil {
		t.Fatal("an observe-only host read another's pane")
	}
	// A malformed record, or one from a clock far off, is refused and counted.
	before := f.hm.view.bad.Load()
	if _, err := f.hm.panes.Put(context.Background(), "c.zz", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	far, _ := json.Marshal(PaneRecord{Host: "c", Pane: api.Pane{ID: "yy", State: "blocked"}, Sent: time.Now().Add(time.Hour)})
	if _, err := f.hm.panes.Put(context.Background(), "c.yy", far); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "two bad records counted", func() bool { return f.hm.view.bad.Load() >= before+2 })
	if paneState(f.hm, "c", "zz") != "" || paneState(f.hm, "c", "yy") != "" {
		t.Fatal("a bad record became a state")
	}
	// Revoked: disconnected, and refused from then on.
	if err := f.hub.Revoke("c"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "c disconnected", func() bool { return !c.nc.IsConnected() })
	if _, err := Join(context.Background(), MemberOptions{Name: "c", URLs: []string{url}, Token: tok}); err == nil {
		t.Fatal("a revoked credential joined")
	}
	// Expired.
	etok, _ := f.hub.Invite("e", true, time.Millisecond)
	time.Sleep(5 * time.Millisecond) // the credential's 1 ms lifetime passes: a clock, not a condition
	if _, err := Join(context.Background(), MemberOptions{Name: "e", URLs: []string{url}, Token: etok}); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("expired credential: %v", err)
	}
	if n, why := f.hub.Refused(); n < 4 {
		t.Fatalf("hub refused %d connections (last: %s)", n, why)
	}
}

func TestFleetJobs(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	lw := newFakeLocal()
	f.join("w", lw, 1)
	var lines []string
	err := f.hm.SubmitJob(context.Background(), "", api.ExecRequest{Agent: "claude", Command: []string{"true"}}, "", 0, func(b []byte) {
		lines = append(lines, string(b))
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 5 || !strings.Contains(lines[0], "host w runs the job") || !strings.Contains(lines[4], `"state":"done"`) {
		t.Fatalf("lines: %q", lines)
	}
	// A host that dies mid-job: the job ends in error, saying so.
	lh := newFakeLocal()
	lh.jobHang = true
	dead := f.join("dies", lh, 1)
	lines = nil
	done := make(chan error, 1)
	go func() {
		done <- f.hm.SubmitJob(context.Background(), "", api.ExecRequest{Agent: "claude"}, "dies", 0, func(b []byte) { lines = append(lines, string(b)) })
	}()
	waitFor(t, 5*time.Second, "the job started on dies", func() bool { return dead.jobs.Load() == 1 })
	time.Sleep(300 * time.Millisecond) // pacing: the host dies a while into the job, not as it takes it
	start := time.Now()
	dead.cancel()
	dead.nc.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the job hangs after its host died")
	}
	last := lines[len(lines)-1]
	if !strings.Contains(last, "stopped answering mid-job") || !strings.Contains(last, `"state":"error"`) {
		t.Fatalf("outcome: %s", last)
	}
	t.Logf("job failed %v after its host died", time.Since(start).Round(time.Millisecond))
}

func TestFleetTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h, err := StartHub(HubOptions{Dir: dir, Listen: "127.0.0.1:0", TLS: true, ServerName: "hub"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.Fingerprint() == "" || !strings.HasPrefix(h.URL(), "tls://") {
		t.Fatalf("TLS hub: %q %q", h.URL(), h.Fingerprint())
	}
	hm, err := Join(context.Background(), MemberOptions{Name: "hub", URLs: []string{h.URL()}, Token: h.AdminToken(), CAFingerprint: h.Fingerprint(), Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer hm.Close(false)
	// Another CA's fingerprint: refused before any credential is sent.
	wrong := strings.Repeat("ab", 32)
	if _, err := Join(context.Background(), MemberOptions{Name: "a", URLs: []string{h.URL()}, Token: h.FleetToken(), CAFingerprint: wrong}); err == nil || !strings.Contains(err.Error(), "not the one the join command names") {
		t.Fatalf("wrong CA fingerprint: %v", err)
	}
	// No TLS at all: refused.
	if _, err := Join(context.Background(), MemberOptions{Name: "a", URLs: []string{h.URL()}, Token: h.FleetToken()}); err == nil {
		t.Fatal("joined a TLS hub without TLS")
	}
	a, err := Join(context.Background(), MemberOptions{Name: "a", URLs: []string{h.URL()}, Token: h.FleetToken(), CAFingerprint: h.Fingerprint(), Local: newFakeLocal("p1")})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(false)
	status, _, err := hm.Request(context.Background(), "a", "GET", "/v1/panes/p1", nil)
	if err != nil || status != 200 {
		t.Fatalf("a command over TLS: %d %v", status, err)
	}
}

// A host that stops answering mid-job has its job queued again, and
// another host runs it.
func TestFleetJobRetry(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	lh := newFakeLocal()
	lh.jobHang = true
	dies := f.join("dies", lh, 1)
	var mu sync.Mutex
	var lines []string
	done := make(chan error, 1)
	go func() {
		done <- f.hm.SubmitJob(context.Background(), "", api.ExecRequest{Agent: "claude"}, "", 1, func(b []byte) {
			mu.Lock()
			lines = append(lines, string(b))
			mu.Unlock()
		})
	}()
	// Mid-job: once the caller heard that dies runs it (a host gone between
	// taking a job and starting it: TestFleetJobTakenNotStarted).
	waitFor(t, 5*time.Second, "the caller to hear that dies runs the job", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(strings.Join(lines, "\n"), "host dies runs the job")
	})
	dies.cancel()
	dies.nc.Close()
	f.join("takes", newFakeLocal(), 1)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the retried job hangs")
	}
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(lines, "\n")
	if !strings.Contains(all, "queued again (attempt 2 of 2)") || !strings.Contains(all, "host takes runs the job") || !strings.Contains(lines[len(lines)-1], `"state":"done"`) {
		t.Fatalf("lines:\n%s", all)
	}
}

// A command another host cannot carry out says why at once: this host may
// not command others (observe-only), or the hub is unreachable — never a
// timeout that blames nobody.
func commandFailuresSayWhy(t *testing.T) {
	f := startFleet(t, "127.0.0.1:0")
	f.join("a", newFakeLocal("r1"), 1)
	otok, err := f.hub.Invite("o", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	o, err := Join(context.Background(), MemberOptions{Name: "o", URLs: []string{f.hub.URL()}, Token: otok,
		CAFingerprint: f.hub.Fingerprint(), Local: newFakeLocal(), Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close(false)
	start := time.Now()
	_, _, err = o.Request(context.Background(), "a", "GET", "/v1/panes/r1", nil)
	if !errors.Is(err, ErrNotPermitted) || time.Since(start) > 3*time.Second {
		t.Fatalf("observe-only: %v after %v", err, time.Since(start))
	}
	t.Logf("observe-only: %v after %v", err, time.Since(start).Round(time.Millisecond))

	f.hub.Close()
	waitFor(t, 10*time.Second, "the member to see the hub gone", func() bool { return !o.nc.IsConnected() })
	start = time.Now()
	_, _, err = o.Request(context.Background(), "a", "GET", "/v1/panes/r1", nil)
	if !errors.Is(err, ErrHubUnreachable) || time.Since(start) > time.Second {
		t.Fatalf("hub gone: %v after %v", err, time.Since(start))
	}
	t.Logf("hub gone: %v", err)
}

// A TLS address without the hub's CA fingerprint names the flag to give.
func TestJoinTLSNeedsFingerprint(t *testing.T) {
	t.Parallel()
	_, err := Join(context.Background(), MemberOptions{Name: "x", URLs: []string{"tls://192.0.2.1:7422"}, Token: "cft_x"})
	if err == nil || !strings.Contains(err.Error(), "--ca-fingerprint") {
		t.Fatalf("join tls:// without a fingerprint: %v", err)
	}
}
