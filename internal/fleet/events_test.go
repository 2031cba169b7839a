package fleet

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
	"github.com/nats-io/nats.go/jetstream"
)

// collect reads every event of the fleet's stream for a host.
func collect(t *testing.T, m *Member, host string) []Event {
	t.Helper()
	s, err := m.js.Stream(context.Background(), EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := s.OrderedConsumer(context.Background(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{subjEvents + host}})
	if err != nil {
		t.Fatal(err)
	}
	var out []Event
	for {
		batch, err := cons.Fetch(1000, jetstream.FetchMaxWait(300*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for msg := range batch.Messages() {
			ev, ok := m.parseEvent(msg)
			if ok {
				out = append(out, ev)
			}
			n++
		}
		if n == 0 {
			return out
		}
	}
}

// hubRestartsUnderEvents restarts the hub under a member that
// produces events: the plain setup (the fleet token, no TLS), and the one
// a real fleet has (TLS, the member enrolled with its own credential, the
// hub serving enrolments, watchers on both sides).
func hubRestartsUnderEvents(t *testing.T) {
	proctest.Slow(t, "a hub away for 7 s, three times")
	t.Parallel()
	run, wait := casesAtOnce(t)
	defer wait()
	for _, tc := range []struct {
		name     string
		tls      bool
		enrolled bool
		busy     bool
	}{
		{"plain", false, false, false},
		{"tls-enrolled-busy", true, true, true},
		{"tls-enrolled", true, true, false},
	} {
		run(tc.name, func(t *testing.T) { // each has its own hub and folder
			eventsResumeAfterHubRestart(t, tc.tls, tc.enrolled, tc.busy)
		})
	}
}

func eventsResumeAfterHubRestart(t *testing.T, withTLS, enrolled, busy bool) {
	dir := t.TempDir()
	startHub := func(listen string) (*Hub, *Member) {
		h, err := StartHub(HubOptions{Dir: dir, Listen: listen, TLS: withTLS, ServerName: "hub"})
		if err != nil {
			t.Fatal(err)
		}
		mo := MemberOptions{Name: "hub", URLs: []string{h.URL()}, Token: h.AdminToken(), CAFingerprint: h.Fingerprint(), Admin: true,
			Local: newFakeLocal(), Watch: enrolled}
		if enrolled {
			mo.Enroll, mo.Unenroll = h.Enroll, h.Revoke
		}
		hm, err := Join(context.Background(), mo)
		if err != nil {
			h.Close()
			t.Fatal(err)
		}
		return h, hm
	}
	h, hm := startHub("127.0.0.1:0")
	addr, fp := h.Addr(), h.Fingerprint()
	la := newFakeLocal("p1")
	var logMu sync.Mutex
	var refusals []string
	a, err := Join(context.Background(), MemberOptions{Name: "a", URLs: []string{h.URL()}, Token: h.FleetToken(), CAFingerprint: fp,
		Local: la, Watch: true, MaxJobs: 1, Logf: func(format string, args ...any) {
			if line := fmt.Sprintf(format, args...); strings.Contains(line, "Permissions Violation") {
				logMu.Lock()
				refusals = append(refusals, line)
				logMu.Unlock()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(false)
	if got := strings.HasPrefix(a.Token(), hostTokenPrefix); got != enrolled {
		t.Fatalf("a enrolled: %v, want %v (token %.8s…)", got, enrolled, a.Token())
	}
	for i := 0; i < 20; i++ {
		la.set("p1", []string{"working", "idle"}[i%2])
	}
	waitFor(t, 5*time.Second, "21 events in the stream", func() bool { return a.Stats().Published == 21 })
	hm.Close(false)
	h.Close()
	// Events while the hub is down are kept.
	for i := 0; i < 30; i++ {
		la.set("p1", []string{"working", "blocked"}[i%2])
	}
	waitFor(t, 5*time.Second, "a disconnected", func() bool { return !a.nc.IsConnected() })
	if busy {
		// What a watchdog's restart or a failed resync does when the hub
		// goes away under it: watchers made again, and the host's keys
		// listed, while the connection is being made again. Stopping the
		// old watcher waits for its consumer's removal (up to the API's
		// 5 s) before the new one is made; a hub away longer gets the new
		// one's request from the reconnect buffer, once back.
		a.mu.Lock()
		close(a.rewatch)
		a.rewatch = make(chan struct{})
		a.dirty["*"] = true
		a.mu.Unlock()
		a.poke()
		time.Sleep(7 * time.Second) // the hub away that long: not a wait for a condition
	}
	h, hm = startHub(addr)
	defer h.Close()
	defer hm.Close(false)
	waitFor(t, 10*time.Second, "a reconnected and caught up", func() bool { return a.nc.IsConnected() && a.Stats().Queued == 0 })
	// The watchers come back: a's own panes and heartbeat through them.
	la.set("p1", "idle")
	waitFor(t, 15*time.Second, "a's view after the restart", func() bool {
		r, ok := hostReachable(a, "a")
		return ok && r && paneState(a, "a", "p1") == "idle"
	})
	evs := collect(t, hm, "a")
	// Its own traffic after the reconnection is nothing the server refuses.
	if st := a.Stats(); st.RefusedOut+st.RefusedAPI != 0 {
		n := st.RefusedOut + st.RefusedAPI
		logMu.Lock()
		t.Errorf("the server refused %d of a's own messages after the reconnection: %v\n%s", n, a.Stats(), strings.Join(refusals, "\n"))
		logMu.Unlock()
	}
	if len(evs) != 52 {
		t.Fatalf("%d events in the stream, want 52", len(evs))
	}
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d: a duplicate or a gap", i, ev.Seq)
		}
	}
}
