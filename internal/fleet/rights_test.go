package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-dev/corral/internal/api"
)

// An observe-only host takes no jobs, and its heartbeat says what it is;
// one invited to take jobs takes them; every host learns its own access.
func observeOnlyTakesJobsOnlyWhenInvited(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	a := f.join("a", newFakeLocal(), 1)
	joinTok := func(name string, r Rights) *Member {
		tok, err := f.hub.InviteRights(name, r, 0)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Join(context.Background(), MemberOptions{Name: name, URLs: []string{f.hub.URL()}, Token: tok, Local: newFakeLocal(), MaxJobs: 2, Watch: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close(false) })
		return m
	}
	o := joinTok("o", Rights{})
	p := joinTok("p", Rights{Jobs: true})
	status := func(host string) HostStatus {
		for _, h := range a.Hosts() {
			if h.Host == host {
				return h
			}
		}
		return HostStatus{}
	}
	for _, tt := range []struct {
		host    string
		m       *Member
		access  string
		maxJobs int
		anyJobs bool
	}{
		{"hub", f.hm, AccessControl, 0, false},
		{"a", a, AccessControl, 1, true},
		{"o", o, AccessObserve, 0, false},
		{"p", p, AccessObserveJobs, 2, true},
	} {
		waitFor(t, 10*time.Second, tt.host+"'s access in the others' view", func() bool {
			h := status(tt.host)
			return h.Reachable && h.Access == tt.access && h.MaxJobs == tt.maxJobs && h.AnyHostJobs == tt.anyJobs
		})
		if r, ok := tt.m.Rights(); !ok || r.access() != tt.access {
			t.Fatalf("%s's own rights: %+v %v, want %s", tt.host, r, ok, tt.access)
		}
	}

	// The server refuses an observe-only credential a consumer on the job
	// queue; it allows one invited to take jobs.
	for _, tt := range []struct {
		name string
		r    Rights
		ok   bool
	}{{"o2", Rights{}, false}, {"p2", Rights{Jobs: true}, true}} {
		tok, err := f.hub.InviteRights(tt.name, tt.r, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The server tells a client it refused a publish: the request
		// ends then, not at its timeout.
		ctx, refused := context.WithCancelCause(context.Background())
		nc, err := nats.Connect(f.hub.URL(), nats.Token(tok), nats.Name(clientNamePrefix+tt.name), nats.CustomInboxPrefix(InboxPrefix(tt.name)),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				if errors.Is(err, nats.ErrPermissionViolation) {
					refused(err)
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		subj := "$JS.API.CONSUMER.CREATE." + JobsStream + "." + anyJobsConsumer + "." + subjJobAny
		body := `{"stream_name":"` + JobsStream + `","config":{"durable_name":"` + anyJobsConsumer + `","filter_subject":"` + subjJobAny + `","ack_policy":"explicit","ack_wait":30000000000}}`
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := nc.RequestWithContext(rctx, subj, []byte(body))
		cancel()
		nc.Close()
		ok := err == nil && !strings.Contains(string(resp.Data), `"error"`)
		if ok != tt.ok {
			t.Fatalf("%s (%+v) creating the job consumer: allowed %v, want %v (%v)", tt.name, tt.r, ok, tt.ok, err)
		}
		if !ok && !errors.Is(context.Cause(ctx), nats.ErrPermissionViolation) {
			t.Fatalf("%s (%+v) creating the job consumer: %v, not the server's refusal", tt.name, tt.r, err)
		}
	}

	// A job for o is not taken; one for p is.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	err := a.SubmitJob(ctx, "", api.ExecRequest{Agent: "claude", Command: []string{"true"}}, "o", 0, func([]byte) {})
	cancel()
	if err == nil || o.jobs.Load() != 0 {
		t.Fatalf("a job for the observe-only o: %v, o ran %d", err, o.jobs.Load())
	}
	var lines []string
	if err := a.SubmitJob(context.Background(), "", api.ExecRequest{Agent: "claude", Command: []string{"true"}}, "p", 0, func(l []byte) {
		lines = append(lines, string(l))
	}); err != nil {
		t.Fatalf("a job for p: %v", err)
	}
	if out := strings.Join(lines, "\n"); !strings.Contains(out, `"state":"done"`) {
		t.Fatalf("p's job:\n%s", out)
	}
}
