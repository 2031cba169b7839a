package fleet

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-dev/corral/internal/api"
)

// TestMembersCannotReadOrTakeOthers: a member's credential (the fleet
// token, which may command and submit jobs) used by a raw NATS client
// cannot create consumers on another host's subjects, take a job
// addressed to another host, read another caller's job output, or
// snoop on the replies other hosts receive. Legitimate traffic of
// non-admin members still works.
func TestMembersCannotReadOrTakeOthers(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	lb := newFakeLocal("b1")
	lb.jobHang = true
	b := f.join("b", lb, 1)
	a := f.join("a", newFakeLocal("a1"), 0)

	// a (not the hub's admin) runs a job on b: b takes it and hangs.
	var mu sync.Mutex
	var lines []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- a.SubmitJob(ctx, "fjfirst", api.ExecRequest{Agent: "claude"}, "b", 0, func(l []byte) {
			mu.Lock()
			lines = append(lines, string(l))
			mu.Unlock()
		})
	}()
	waitFor(t, 10*time.Second, "a's job running on b with its output back at a", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return b.jobs.Load() == 1 && len(lines) >= 3
	})
	// A second job for b waits in b's queue (b is at capacity).
	jr := []byte(`{"id":"fjsecond","from":"a","exec":{"agent":"claude","command":["secret-arg"]}}`)
	if _, err := a.js.Publish(context.Background(), subjJobFor+"b", jr); err != nil {
		t.Fatal(err)
	}

	// The attacker: member m's credential on a raw connection.
	nc, err := nats.Connect(f.hub.URL(), nats.Token(f.hub.FleetToken()), nats.Name(clientNamePrefix+"m"),
		nats.CustomInboxPrefix(InboxPrefix("m")), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// api makes a raw JetStream API request: a refusal is no answer (the
	// server drops a message on a subject the user may not publish) or
	// an error answer.
	apiReq := func(subj, body string) (string, bool) {
		resp, err := nc.Request(subj, []byte(body), time.Second)
		if err != nil {
			return err.Error(), false
		}
		s := string(resp.Data)
		if strings.Contains(s, `"error"`) {
			return s, false
		}
		return s, true
	}
	// The connection works for what any member may do: follow the
	// fleet's events (the board's state changes).
	evs, err := js.OrderedConsumer(context.Background(), EventsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subjEvents + "*"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := evs.Next(jetstream.FetchMaxWait(3 * time.Second)); err != nil {
		t.Fatalf("a member cannot read the fleet's events: %v", err)
	}
	checks := []struct {
		name    string
		attempt func() (string, bool) // what it got, and whether it worked
	}{
		{"create a consumer on another host's job subject", func() (string, bool) {
			return apiReq("$JS.API.CONSUMER.CREATE."+JobsStream+".spy."+subjJobFor+"b",
				`{"stream_name":"`+JobsStream+`","config":{"name":"spy","filter_subject":"`+subjJobFor+`b","ack_policy":"explicit"}}`)
		}},
		{"create an unfiltered consumer on the job queue", func() (string, bool) {
			return apiReq("$JS.API.CONSUMER.CREATE."+JobsStream+".spy2",
				`{"stream_name":"`+JobsStream+`","config":{"name":"spy2","ack_policy":"explicit"}}`)
		}},
		{"take another host's job", func() (string, bool) {
			resp, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT."+JobsStream+".host_b", []byte(`{"batch":1,"expires":500000000}`), 2*time.Second)
			if err != nil {
				return err.Error(), false
			}
			return string(resp.Data), len(resp.Data) > 0
		}},
		{"read a queued job by sequence", func() (string, bool) {
			for seq := 1; seq <= 3; seq++ {
				if s, ok := apiReq("$JS.API.STREAM.MSG.GET."+JobsStream, `{"seq":`+strconv.Itoa(seq)+`}`); ok {
					return s, true
				}
			}
			return "", false
		}},
		{"delete another host's job consumer", func() (string, bool) {
			return apiReq("$JS.API.CONSUMER.DELETE."+JobsStream+".host_b", "")
		}},
		{"list the job output's subjects", func() (string, bool) {
			s, ok := apiReq("$JS.API.STREAM.INFO."+OutputStream, `{"subjects_filter":">"}`)
			return s, ok && strings.Contains(s, "fjfirst")
		}},
		{"read another caller's job output", func() (string, bool) {
			cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer ccancel()
			for _, filter := range []string{subjJobOut + ">", subjJobOut + "a.>", subjJobOut + "*.b.>"} {
				cons, err := js.OrderedConsumer(cctx, OutputStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
				if err != nil {
					continue
				}
				if msg, err := cons.Next(jetstream.FetchMaxWait(time.Second)); err == nil {
					return string(msg.Data()), true
				}
			}
			return "", false
		}},
		{"pull from or inspect the caller's own output consumer, knowing its name", func() (string, bool) {
			st, err := f.hm.js.Stream(context.Background(), OutputStream)
			if err != nil {
				return err.Error(), true
			}
			names := st.ConsumerNames(context.Background())
			n := 0
			for name := range names.Name() {
				n++
				if s, ok := apiReq("$JS.API.CONSUMER.INFO."+OutputStream+"."+name, ""); ok {
					return s, true
				}
				resp, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT."+OutputStream+"."+name, []byte(`{"batch":1,"expires":500000000}`), time.Second)
				if err == nil && len(resp.Data) > 0 {
					return string(resp.Data), true
				}
			}
			if n == 0 {
				return "no consumer on the job output (the caller's follows it)", true
			}
			return "", false
		}},
		{"snoop on the replies other hosts receive", func() (string, bool) {
			sub, err := nc.SubscribeSync("_INBOX.>")
			if err != nil {
				return err.Error(), false
			}
			defer sub.Unsubscribe()
			_ = nc.Flush()
			if status, _, err := a.Request(context.Background(), "b", "GET", "/v1/panes/b1", nil); err != nil || status != 200 {
				return "a's request to b failed", true
			}
			msg, err := sub.NextMsg(time.Second)
			if err != nil {
				return err.Error(), false
			}
			return string(msg.Data), true
		}},
	}
	// At once: most refusals are silences that last a request's timeout
	// (1–3 s each, about 12 s in turn).
	var wg sync.WaitGroup
	for _, tc := range checks {
		wg.Go(func() {
			t.Run(tc.name, func(t *testing.T) {
				if got, ok := tc.attempt(); ok {
					t.Fatalf("allowed: %.300s", got)
				} else {
					t.Logf("refused: %.200s", got)
				}
			})
		})
	}
	wg.Wait()
	// The refusals left the fleet working: b still takes its queued job
	// once the first ends, and a still reads b's states.
	cancel()
	if err := <-done; err != nil && err != context.Canceled {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "b took its second job", func() bool {
		ci, err := b.js.Consumer(context.Background(), JobsStream, "host_b")
		return err == nil && ci.CachedInfo().NumPending == 0 && ci.CachedInfo().NumAckPending == 0
	})
	waitFor(t, 5*time.Second, "a sees b's pane", func() bool { return paneState(a, "b", "b1") == "idle" })
	// An "any host" job from a non-admin member runs and comes back to it.
	f.join("w", newFakeLocal(), 1)
	var anyLines []string
	if err := a.SubmitJob(context.Background(), "", api.ExecRequest{Agent: "claude"}, "", 0, func(l []byte) { anyLines = append(anyLines, string(l)) }); err != nil {
		t.Fatal(err)
	}
	if len(anyLines) != 5 || !strings.Contains(anyLines[4], `"state":"done"`) {
		t.Fatalf("lines: %q", anyLines)
	}
}

// TestFleetTokenEnrolls: a host that joins with the fleet token gets its
// own credential at once, and from then on the fleet token cannot take
// its name (no member can connect as another host that joined); when the
// host leaves, the name is free again.
func TestFleetTokenEnrolls(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	m, err := Join(context.Background(), MemberOptions{Name: "b", URLs: []string{f.hub.URL()}, Token: f.hub.FleetToken(), Local: newFakeLocal("b1"), Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	if tok := m.Token(); !strings.HasPrefix(tok, hostTokenPrefix+"b_") {
		t.Fatalf("b kept %q", tok)
	}
	// Another member, holding the fleet token, tries to be b.
	_, err = nats.Connect(f.hub.URL(), nats.Token(f.hub.FleetToken()), nats.Name(clientNamePrefix+"b"))
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("the fleet token connected as b after b enrolled: %v", err)
	}
	// b's reconnections use its own credential.
	f.hub.kick("b")
	waitFor(t, 5*time.Second, "b reconnected", func() bool { return m.nc.IsConnected() && m.nc.Stats().Reconnects > 0 })
	waitFor(t, 5*time.Second, "the hub sees b:b1", func() bool { return paneState(f.hm, "b", "b1") == "idle" })
	// Leaving frees the name.
	m.Close(true)
	waitFor(t, 5*time.Second, "b's credential forgotten", func() bool { _, ok := f.hub.auth.credential("b"); return !ok })
	again, err := Join(context.Background(), MemberOptions{Name: "b", URLs: []string{f.hub.URL()}, Token: f.hub.FleetToken(), Local: newFakeLocal()})
	if err != nil {
		t.Fatalf("rejoining after leaving: %v", err)
	}
	again.Close(false)
}
