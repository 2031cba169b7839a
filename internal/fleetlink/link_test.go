package fleetlink

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/board"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/fleet"
	"github.com/corral-dev/corral/internal/httpapi"
	"github.com/corral-dev/corral/internal/proctest"
)

// fakeDaemon is a Daemon with fixed panes and a status route.
type fakeDaemon struct {
	mu    sync.Mutex
	panes []api.Pane
	hub   *eventlog.Hub
	mux   *http.ServeMux
}

func newFakeDaemon(panes ...api.Pane) *fakeDaemon {
	d := &fakeDaemon{panes: panes, hub: eventlog.NewHub(), mux: http.NewServeMux()}
	d.mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"fake":true}`)
	})
	return d
}

func (d *fakeDaemon) Handler() http.Handler { return d.mux }

func (d *fakeDaemon) Panes() []api.Pane {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.panes)
}

func (d *fakeDaemon) Pane(id string) (api.Pane, bool) {
	for _, p := range d.Panes() {
		if p.ID == id {
			return p, true
		}
	}
	return api.Pane{}, false
}

func (d *fakeDaemon) Exists(ref string) error {
	for _, p := range d.Panes() {
		if p.ID == ref || p.Name == ref {
			return nil
		}
	}
	return httpapi.NotFound(fmt.Errorf("no pane %s", ref))
}

func (d *fakeDaemon) Subscribe(after uint64) (<-chan eventlog.Event, []eventlog.Event, func()) {
	sub, backlog := d.hub.Subscribe(after)
	return sub.C, backlog, sub.Close
}

func (d *fakeDaemon) Attach(ref string) (httpapi.Session, error) {
	return nil, errors.New("the fake daemon has no terminals")
}

func (d *fakeDaemon) Notify(eventlog.Event) {}

// localBoard is the fake daemon's web board: its panes only.
type localBoard struct {
	board.Backend // nil: the tests call Panes alone
	d             *fakeDaemon
}

func (b localBoard) Panes() []api.Pane { return b.d.Panes() }

func exit0() *int { return new(int) }

// codeOf is an API error's status and code.
func codeOf(err error) (int, string) {
	var e *httpapi.Error
	if errors.As(err, &e) {
		return e.Status, e.Code
	}
	return 0, fmt.Sprint(err)
}

// Outside a fleet each route refuses with the status and code the CLI
// reads, and the daemon's own panes are still its own.
func TestOutsideAFleet(t *testing.T) {
	d := newFakeDaemon(
		api.Pane{ID: "p1", Name: "web:1.0", State: "idle"},
		api.Pane{ID: "j1", Name: "job", Backend: "headless", State: "working", Agent: "claude"},
		api.Pane{ID: "j2", Backend: "headless", State: "exited", ExitCode: exit0()},
	)
	l := New(d, Options{StateDir: t.TempDir(), Logf: t.Logf})
	ctx := context.Background()
	two := 2
	cases := []struct {
		name   string
		call   func() error
		status int
		code   string
	}{
		{"status", func() error { _, err := l.FleetStatus(); return err }, 409, "no_fleet"},
		{"panes", func() error { _, err := l.FleetPanes(fleet.PaneFilter{}); return err }, 409, "no_fleet"},
		{"jobs", func() error { _, err := l.FleetJobs(ctx); return err }, 409, "no_fleet"},
		{"exec", func() error {
			_, err := l.FleetExec(fleet.ExecRequest{Exec: api.ExecRequest{Command: []string{"true"}}})
			return err
		}, 409, "no_fleet"},
		{"job feed", func() error { _, err := l.FleetJobFeed("f1"); return err }, 404, "not_found"},
		{"job kill", func() error { _, err := l.FleetJobKill("f1"); return err }, 404, "not_found"},
		{"leave", func() error { _, err := l.FleetLeave(); return err }, 409, "no_fleet"},
		{"invite", func() error { _, err := l.FleetInvite(fleet.InviteRequest{Name: "b"}); return err }, 409, "not_hub"},
		{"forget", func() error { _, err := l.FleetForget(fleet.ForgetRequest{Host: "b"}); return err }, 409, "not_hub"},
		{"set", func() error { _, err := l.FleetSet(fleet.SetRequest{MaxJobs: &two}); return err }, 409, "not_in_fleet"},
		{"request", func() error { _, _, err := l.FleetRequest(ctx, "b", "GET", "/v1/status", nil); return err }, 409, "no_fleet"},
		{"attach", func() error { _, err := l.FleetAttach(ctx, "b", "p1"); return err }, 409, "no_fleet"},
		{"events", func() error {
			return l.FleetEvents(ctx, "", time.Time{}, func() { t.Error("events followed outside a fleet") }, func(fleet.Event) error { return nil })
		}, 409, "no_fleet"},
		{"init with a bad name", func() error { _, err := l.FleetInit(fleet.InitRequest{Name: "no spaces"}); return err }, 400, "bad_request"},
		{"init with a negative forget-after", func() error {
			_, err := l.FleetInit(fleet.InitRequest{Name: "a", ForgetAfterMS: -1})
			return err
		}, 400, "bad_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, code := codeOf(tc.call())
			if status != tc.status || code != tc.code {
				t.Errorf("got %d %s, want %d %s", status, code, tc.status, tc.code)
			}
		})
	}

	paths := []struct {
		host, rest, want string
		local            bool
	}{
		{"web", "/v1/panes/1.0/screen?ansi=1", "/v1/panes/web:1.0/screen?ansi=1", true},
		{"web", "/v1/panes/1.0", "/v1/panes/web:1.0", true},
		{"web", "/v1/panes/2.0", "", false},
		{"b", "/v1/status", "", false},
	}
	for _, tc := range paths {
		got, local := l.LocalPath(tc.host, tc.rest)
		if got != tc.want || local != tc.local {
			t.Errorf("LocalPath(%s, %s) = %q, %v; want %q, %v", tc.host, tc.rest, got, local, tc.want, tc.local)
		}
	}

	want := []fleet.JobRow{{ID: "j1", Name: "job", Agent: "claude", State: "working"}}
	if got := l.Jobs(); !slices.Equal(got, want) {
		t.Errorf("Jobs() = %+v, want %+v", got, want)
	}
	if got := l.BoardBackend(localBoard{d: d}).Panes(); len(got) != 3 || got[0].Host != "" {
		t.Errorf("the board outside a fleet shows %+v, want the three panes with no host", got)
	}
}

// A daemon that starts a fleet is its hub and its first member: the
// fleet's view holds its panes, its own API answers its host's requests,
// and leaving takes it all down.
func TestInitServesTheDaemon(t *testing.T) {
	d := newFakeDaemon(api.Pane{ID: "p1", Name: "one", State: "idle"}, api.Pane{ID: "j1", Backend: "headless", State: "working"})
	dir := t.TempDir()
	l := New(d, Options{StateDir: dir, Logf: t.Logf})
	t.Cleanup(func() { l.Stop(true) })

	info, err := l.FleetInit(fleet.InitRequest{Name: "alpha", Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Token == "" || !strings.HasPrefix(info.Join, "corral fleet join "+info.URL+" --token "+info.Token) {
		t.Errorf("fleet init answered %+v: no join command with its token", info)
	}
	cfg, err := fleet.LoadConfig(dir)
	if err != nil || cfg.Name != "alpha" || !cfg.Hub || strings.HasSuffix(cfg.Listen, ":0") {
		t.Errorf("the saved config is %+v, %v; want alpha's hub on the port it took", cfg, err)
	}
	_, err = l.FleetInit(fleet.InitRequest{Name: "alpha"})
	if status, code := codeOf(err); status != 409 || code != "in_fleet" {
		t.Errorf("a second fleet init: %d %s, want 409 in_fleet", status, code)
	}

	var recs []fleet.PaneRecord
	if !proctest.WaitFor(30*time.Second, func() bool {
		recs, err = l.FleetPanes(fleet.PaneFilter{Hosts: []string{"alpha"}})
		return err == nil && len(recs) == 2
	}) {
		t.Fatalf("the fleet's view never held alpha's two panes: %+v, %v", recs, err)
	}
	st, err := l.FleetStatus()
	if err != nil || st.Name != "alpha" || !st.Hub || !st.Joined {
		t.Errorf("fleet status: %+v, %v", st, err)
	}
	if got, local := l.LocalPath("alpha", "/v1/status"); got != "/v1/status" || !local {
		t.Errorf("LocalPath(alpha, /v1/status) = %q, %v; want its own API", got, local)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	status, body, err := l.FleetRequest(ctx, "alpha", "GET", "/v1/status", nil)
	if err != nil || status != 200 || string(body) != `{"fake":true}` {
		t.Errorf("a request to alpha through the fleet: %d %s %v; want the daemon's own answer", status, body, err)
	}
	if jobs := l.Jobs(); len(jobs) != 1 || jobs[0].Host != "alpha" || jobs[0].ID != "j1" {
		t.Errorf("Jobs() = %+v, want j1 on alpha", jobs)
	}
	b := l.BoardBackend(localBoard{d: d})
	if ps := b.Panes(); len(ps) != 2 || ps[0].Host != "alpha" || ps[0].ID != "p1" {
		t.Errorf("the board's panes: %+v, want alpha's own two, with their host", ps)
	}
	if hosts := b.(board.HostLister).Hosts(); !slices.Equal(hosts, []board.Host{{Host: "alpha", Reachable: true}}) {
		t.Errorf("the board's hosts: %+v", hosts)
	}

	left, err := l.FleetLeave()
	if err != nil || left.Left != "alpha" || !left.WasHub {
		t.Errorf("fleet leave: %+v, %v", left, err)
	}
	if _, err := fleet.LoadConfig(dir); !errors.Is(err, fleet.ErrNotConfigured) {
		t.Errorf("the config after leaving: %v, want none", err)
	}
	if status, code := codeOf(func() error { _, err := l.FleetStatus(); return err }()); status != 409 || code != "no_fleet" {
		t.Errorf("fleet status after leaving: %d %s, want 409 no_fleet", status, code)
	}
}
