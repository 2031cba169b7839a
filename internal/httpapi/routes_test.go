package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/fleet"
)

// fakeService answers for one pane, "p", and records what it was asked.
// Its restore and tmux routes refuse; events are not its part.
type fakeService struct {
	Events
	Fleet
	Proxy
	calls []string
	sig   syscall.Signal
	grace time.Duration
	esc   bool
}

var errNoPane = NotFound(errors.New("no pane named x"))

func (f *fakeService) note(c string) { f.calls = append(f.calls, c) }
func (f *fakeService) ListPanes() []api.Pane {
	return []api.Pane{{ID: "p", Name: "n", State: "idle", Command: []string{"sh"}}}
}
func (f *fakeService) PaneRows() []api.PaneRow { return []api.PaneRow{f.ListPanes()[0].Row()} }
func (f *fakeService) Exists(ref string) error {
	if ref != "p" {
		return errNoPane
	}
	return nil
}
func (f *fakeService) Pane(ref string) (api.Pane, error) {
	if err := f.Exists(ref); err != nil {
		return api.Pane{}, err
	}
	return api.Pane{ID: "p"}, nil
}
func (f *fakeService) Run(req api.RunRequest) (api.Pane, error) {
	f.note("run")
	return api.Pane{}, BadRequest(errors.New("no command"))
}
func (f *fakeService) Screen(ref string, ansi bool) (api.Screen, error) {
	return api.Screen{Pane: ref}, f.Exists(ref)
}
func (f *fakeService) Send(ctx context.Context, ref string, req api.SendRequest, wait time.Duration) (api.Pane, error) {
	f.note("send")
	return api.Pane{}, Conflict("blocked", errors.New("blocked on a prompt"))
}
func (f *fakeService) Answer(ref, choice string) (api.AnswerResult, error) {
	f.note("answer " + choice)
	return api.AnswerResult{Pane: ref, Keys: "y"}, nil
}
func (f *fakeService) Kill(ref string, sig syscall.Signal, escalate bool, grace time.Duration) (api.Pane, error) {
	f.note("kill")
	f.sig, f.esc, f.grace = sig, escalate, grace
	return api.Pane{ID: ref}, nil
}
func (f *fakeService) Remove(ref string, force, worktree bool) (api.Pane, error) {
	return api.Pane{}, errors.New("disk on fire")
}
func (f *fakeService) Attach(ref string) (Session, error) {
	return nil, Coded(http.StatusServiceUnavailable, "busy", errors.New("busy"))
}
func (f *fakeService) Exec(req api.ExecRequest) (api.Pane, error) {
	f.note("exec")
	return api.Pane{ID: "j", Backend: "headless"}, nil
}
func (f *fakeService) JobFeed(ref string) (JobFeed, error) {
	if ref != "j" {
		return nil, BadRequest(errors.New("not a headless job"))
	}
	return &fakeFeed{}, nil
}
func (f *fakeService) Hook(req api.HookRequest) (api.HookResult, error) { return api.HookResult{}, nil }
func (f *fakeService) Status() api.Status                               { return api.Status{PID: 7} }
func (f *fakeService) Rules() api.Rules                                 { return api.Rules{} }
func (f *fakeService) Shutdown()                                        {}
func (f *fakeService) Board(req api.BoardRequest) (api.BoardResult, error) {
	return api.BoardResult{URL: "http://b/" + req.Addr}, nil
}
func (f *fakeService) Handover(req api.HandoverRequest) (api.HandoverResult, error) {
	return api.HandoverResult{}, Conflict("handing_over", errors.New("already"))
}
func (f *fakeService) Restore(req api.RestoreRequest) ([]api.Restored, error) {
	f.note("restore " + strings.Join(req.IDs, ","))
	return nil, NotFound(errors.New("no lost pane"))
}
func (f *fakeService) TmuxServers() []api.TmuxServer { return nil }
func (f *fakeService) WatchTmux(req api.TmuxRequest) (api.TmuxServer, error) {
	return api.TmuxServer{}, nil
}
func (f *fakeService) UnwatchTmux(req api.TmuxRequest) error {
	f.note("unwatch")
	return nil
}

// Each route decodes its request, calls one method, and answers what it
// returned: a value as JSON, an *Error with its status and code, any other
// error as 500; a missing pane before a bad body; a bad body before the
// daemon is asked.
func TestRoutes(t *testing.T) {
	for _, c := range []struct {
		method, target, body string
		status               int
		code                 string // an error's code ("" for a success)
		call                 string // the method called ("" for none)
	}{
		{"GET", "/v1/panes/p", "", 200, "", ""},
		{"GET", "/v1/panes/x", "", 404, "not_found", ""},
		{"POST", "/v1/panes", `{"command":[]}`, 400, "bad_request", "run"},
		{"POST", "/v1/panes", `{"nonsense":1}`, 400, "bad_request", ""},
		{"POST", "/v1/panes", `{"command":` + strings.Repeat(" ", MaxBody) + `[]}`, 400, "bad_request", ""},
		{"POST", "/v1/panes/p/send", `{"text":"hi"}`, 409, "blocked", "send"},
		{"POST", "/v1/panes/x/send", `not json`, 404, "not_found", ""},
		{"POST", "/v1/panes/p/send", `not json`, 400, "bad_request", ""},
		{"POST", "/v1/panes/p/answer", `{"choice":"yes"}`, 200, "", "answer yes"},
		{"POST", "/v1/panes/p/kill", `{"signal":"bogus"}`, 400, "bad_request", ""},
		{"POST", "/v1/panes/p/kill", `{"grace":"1h"}`, 400, "bad_request", ""},
		{"POST", "/v1/panes/p/kill", `{"signal":"sighup"}`, 200, "", "kill"},
		{"DELETE", "/v1/panes/p", "", 500, "internal", ""},
		{"GET", "/v1/status", "", 200, "", ""},
		{"GET", "/v1/panes/p/attach", "", 503, "busy", ""},
		{"POST", "/v1/jobs", `{"command":["x"]}`, 200, "", "exec"},
		{"POST", "/v1/restore", `{"ids":["a","b"]}`, 404, "not_found", "restore a,b"},
		{"POST", "/v1/restore", `{"ids":"a"}`, 400, "bad_request", ""},
		{"POST", "/v1/tmux/unwatch", `{}`, 200, "", "unwatch"},
		{"POST", "/v1/handover", `{}`, 409, "handing_over", ""},
		{"POST", "/v1/board", `{"addr":"x:1"}`, 200, "", ""},
	} {
		t.Run(c.method+" "+c.target[:min(len(c.target), 30)], func(t *testing.T) {
			f := &fakeService{}
			rec := httptest.NewRecorder()
			New(f).ServeHTTP(rec, httptest.NewRequest(c.method, c.target, strings.NewReader(c.body)))
			if rec.Code != c.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, c.status, rec.Body)
			}
			var e api.Error
			if c.code != "" && (json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code != c.code || e.Error == "") {
				t.Errorf("answer %s, want code %s", rec.Body, c.code)
			}
			if got := strings.Join(f.calls, ","); got != c.call {
				t.Errorf("called %q, want %q", got, c.call)
			}
		})
	}
}

// kill reads a signal's name or number; no signal is TERM, then KILL after
// the grace.
func TestKillSignals(t *testing.T) {
	for _, c := range []struct {
		body  string
		sig   syscall.Signal
		esc   bool
		grace time.Duration
	}{
		{`{}`, syscall.SIGTERM, true, api.DefaultKillGrace},
		{`{"grace":"2s"}`, syscall.SIGTERM, true, 2 * time.Second},
		{`{"signal":"KILL"}`, syscall.SIGKILL, false, api.DefaultKillGrace},
		{`{"signal":"SIGINT"}`, syscall.SIGINT, false, api.DefaultKillGrace},
		{`{"signal":"10"}`, syscall.Signal(10), false, api.DefaultKillGrace},
	} {
		f := &fakeService{}
		rec := httptest.NewRecorder()
		New(f).ServeHTTP(rec, httptest.NewRequest("POST", "/v1/panes/p/kill", strings.NewReader(c.body)))
		if rec.Code != http.StatusOK || f.sig != c.sig || f.esc != c.esc || f.grace != c.grace {
			t.Errorf("%s: %d, signal %v escalate %v grace %v; want %v %v %v", c.body, rec.Code, f.sig, f.esc, f.grace, c.sig, c.esc, c.grace)
		}
	}
}

// fakeFeed is a job that writes two events, misses none, and ends.
type fakeFeed struct{ asked []int }

func (f *fakeFeed) Since(next int) ([]any, int, <-chan struct{}, bool) {
	f.asked = append(f.asked, next)
	evs := []any{map[string]any{"type": "a"}, map[string]any{"type": "b"}}
	if next >= len(evs) {
		return nil, next, nil, true
	}
	more := make(chan struct{})
	close(more)
	return evs[next:], len(evs), more, false
}
func (f *fakeFeed) Detached() <-chan struct{} { return nil }
func (f *fakeFeed) Outcome() any              { return map[string]any{"state": "done"} }

// A job's stream writes its events from ?from on, then its outcome.
func TestJobStream(t *testing.T) {
	for _, c := range []struct{ target, want string }{
		{"/v1/jobs/j/stream", `{"type":"a"}` + "\n" + `{"type":"b"}` + "\n" + `{"outcome":{"state":"done"},"type":"outcome"}` + "\n"},
		{"/v1/jobs/j/stream?from=1", `{"type":"b"}` + "\n" + `{"outcome":{"state":"done"},"type":"outcome"}` + "\n"},
	} {
		rec := httptest.NewRecorder()
		New(&fakeService{}).ServeHTTP(rec, httptest.NewRequest("GET", c.target, nil))
		if rec.Code != 200 || rec.Body.String() != c.want {
			t.Errorf("%s: %d %q, want %q", c.target, rec.Code, rec.Body, c.want)
		}
	}
	rec := httptest.NewRecorder()
	New(&fakeService{}).ServeHTTP(rec, httptest.NewRequest("GET", "/v1/jobs/p/stream", nil))
	if rec.Code != 400 {
		t.Errorf("a pane's job stream: %d %s", rec.Code, rec.Body)
	}
}

// fleetEventsService follows the fleet's events as told: an error before
// ready, or ready after a delay, then one event, then nothing until the
// stream is ended.
type fleetEventsService struct {
	fakeService
	before error
	delay  time.Duration
}

func (f *fleetEventsService) FleetEvents(ctx context.Context, host string, since time.Time, ready func(), each func(fleet.Event) error) error {
	if f.before != nil {
		return f.before
	}
	select { // following takes this long (a fleet whose hub just went)
	case <-time.After(f.delay):
	case <-ctx.Done():
		return fmt.Errorf("follow the fleet's events: %w", ctx.Err())
	}
	ready()
	if err := each(fleet.Event{Host: "m"}); err != nil {
		return err
	}
	<-ctx.Done()
	return ctx.Err()
}

// The fleet's events: the daemon's refusal is the answer, a stream that
// could not be followed ends with a line saying why, and without ?follow
// the stream ends once idle for a second after it is followed, however
// long following took.
func TestFleetEvents(t *testing.T) {
	get := func(svc Service) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		New(svc).ServeHTTP(rec, httptest.NewRequest("GET", "/v1/fleet/events?since=2026-01-01T00:00:00Z", nil))
		return rec
	}
	rec := get(&fleetEventsService{before: Conflict("no_fleet", errors.New("in no fleet"))})
	if e := (api.Error{}); rec.Code != 409 || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code != "no_fleet" {
		t.Errorf("a refusal: %d %s", rec.Code, rec.Body)
	}
	rec = get(&fleetEventsService{before: errors.New("follow the fleet's events: context deadline exceeded")})
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"end":"follow the fleet's events: context deadline exceeded"`) {
		t.Errorf("a stream not followed: %d %s", rec.Code, rec.Body)
	}
	start := time.Now()
	rec = get(&fleetEventsService{delay: 1200 * time.Millisecond})
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"host":"m"`) {
		t.Errorf("a stream followed after 1.2 s: %d %q", rec.Code, rec.Body)
	}
	if took := time.Since(start); took < 2*time.Second || took > 10*time.Second {
		t.Errorf("the stream ended %v after it began, want about a second after its event", took)
	}
}
