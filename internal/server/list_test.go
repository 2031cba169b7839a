package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	rulesdata "github.com/corral-dev/corral/agents"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/proctest"
	"github.com/corral-dev/corral/internal/rules"
)

// stuckSource is an outside terminal whose size change does not return
// until released, as a tmux server that does not answer: the pane's lock
// is held meanwhile.
type stuckSource struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (s *stuckSource) Write(b []byte) (int, error)     { return len(b), nil }
func (s *stuckSource) Size() (int, int, error)         { return 80, 24, nil }
func (s *stuckSource) Foreground() (int, error)        { return 0, errors.New("none") }
func (s *stuckSource) Unread() (int, error)            { return 0, errors.New("cannot say") }
func (s *stuckSource) Signal(sig syscall.Signal) error { return nil }
func (s *stuckSource) Close() error                    { return nil }
func (s *stuckSource) Kind() string                    { return "stuck" }
func (s *stuckSource) SetSize(int, int) error {
	s.entered <- struct{}{}
	<-s.release
	return nil
}
func (s *stuckSource) free() { s.once.Do(func() { close(s.release) }) }

// The list reads each pane's published state: panes whose lock is held
// (a read loop or a source that does not return) or whose change consumer
// does not return answer at once, with the state they last reached.
func TestListAnswersWhilePanesAreStuck(t *testing.T) {
	set, errs := rules.Loader{Embedded: rulesdata.Rules}.Load(nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	const panes = 3
	for _, tc := range []struct {
		name string
		// stick makes pane p stuck once it reads blocked.
		stick func(p *pane.Pane, src *stuckSource, consumer chan struct{})
	}{
		{"the pane's lock is held", func(p *pane.Pane, src *stuckSource, _ chan struct{}) {
			go p.Resize(100, 30)
			<-src.entered
		}},
		{"the change consumer does not return", func(_ *pane.Pane, _ *stuckSource, consumer chan struct{}) {
			<-consumer
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testServer(t)
			for i := range panes {
				id := fmt.Sprintf("p%d", i)
				src := &stuckSource{entered: make(chan struct{}), release: make(chan struct{})}
				consumer, release := make(chan struct{}, 1), make(chan struct{})
				p, _, err := pane.Open(pane.Config{ID: id, Rules: set, Agent: "claude-code", Sweep: time.Hour,
					OnChange: func(_ *pane.Pane, c detect.Change) {
						if c.Decision.State == combine.Blocked {
							consumer <- struct{}{}
							<-release
						}
					}}, src, 0, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { p.Close(time.Second) })
				t.Cleanup(src.free)
				t.Cleanup(func() { close(release) })
				p.ApplyHook(detect.Hook{State: combine.Blocked, Kind: "permission", Message: "approve Bash: make " + id})
				if !proctest.WaitFor(5*time.Second, func() bool { return p.Info().Decision.State == combine.Blocked }) {
					t.Fatalf("pane %s never read blocked: %+v", id, p.Info().Decision)
				}
				tc.stick(p, src, consumer)
				registerTestPane(t, s, id, "name-"+id, p)
			}

			start := time.Now()
			rec := httptest.NewRecorder()
			s.routes().ServeHTTP(rec, httptest.NewRequest("GET", "/v1/panes", nil))
			took := time.Since(start)
			var got []api.Pane
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("list: %v (%s)", err, rec.Body.Bytes())
			}
			if took > pane.LockWait/4 {
				t.Errorf("the list of %d stuck panes took %v", panes, took)
			}
			if len(got) != panes {
				t.Fatalf("%d panes listed, want %d", len(got), panes)
			}
			for i, row := range got {
				id := fmt.Sprintf("p%d", i)
				if row.ID != id || row.State != string(combine.Blocked) || row.Source != string(combine.SourceHook) ||
					row.Message != "approve Bash: make "+id {
					t.Errorf("row %d: %s %s/%s %q, want %s blocked by its hook", i, row.ID, row.State, row.Source, row.Message, id)
				}
			}
		})
	}
}

// GET /v1/panes?view=ls answers each pane's columns for corral ls, the
// same values as the whole answer, and nothing else.
func TestListViewLs(t *testing.T) {
	set, errs := rules.Loader{Embedded: rulesdata.Rules}.Load(nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	s := testServer(t)
	for i := range 3 {
		id := fmt.Sprintf("p%d", i)
		src := &stuckSource{entered: make(chan struct{}), release: make(chan struct{})}
		p, _, err := pane.Open(pane.Config{ID: id, Rules: set, Agent: "claude-code", Sweep: time.Hour}, src, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close(time.Second) })
		t.Cleanup(src.free)
		p.ApplyHook(detect.Hook{State: combine.Blocked, Kind: "permission", Message: "approve Bash: make " + id})
		// Settled before the two answers are compared.
		if !proctest.WaitFor(5*time.Second, func() bool { return p.Info().Decision.State == combine.Blocked }) {
			t.Fatalf("pane %s never read blocked: %+v", id, p.Info().Decision)
		}
		registerTestPane(t, s, id, "name-"+id, p)
	}
	get := func(path string) []byte {
		rec := httptest.NewRecorder()
		s.routes().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Body.Bytes()
	}
	var whole []api.Pane
	if err := json.Unmarshal(get("/v1/panes"), &whole); err != nil || len(whole) != 3 {
		t.Fatalf("whole: %v, %d panes", err, len(whole))
	}
	rowsJSON := get("/v1/panes?view=ls")
	var rows []api.PaneRow
	if err := json.Unmarshal(rowsJSON, &rows); err != nil || len(rows) != len(whole) {
		t.Fatalf("rows: %v, %d", err, len(rows))
	}
	var keys []map[string]any
	json.Unmarshal(rowsJSON, &keys)
	for i, p := range whole {
		got, _ := json.Marshal(rows[i])
		want, _ := json.Marshal(p.Row())
		if string(got) != string(want) {
			t.Errorf("row %d: %s, want %s", i, got, want)
		}
		if len(keys[i]) != 10 {
			t.Errorf("row %d has %d fields: %v", i, len(keys[i]), keys[i])
		}
	}
}

// The daemon's side of corral ls and ls --json at 1,000 panes: the whole
// panes, and ls's columns only (go test ./internal/server -run XXX -bench
// List).
func BenchmarkList(b *testing.B) {
	set, errs := rules.Loader{Embedded: rulesdata.Rules}.Load(nil)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	s := testServer(b)
	for i := range 1000 {
		id := fmt.Sprintf("p%d", i)
		src := &stuckSource{entered: make(chan struct{}), release: make(chan struct{})}
		p, _, err := pane.Open(pane.Config{ID: id, Argv: []string{"claude", "--model", "x"}, Rules: set, Agent: "claude-code", Sweep: time.Hour}, src, 0, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Close(time.Second) })
		b.Cleanup(src.free)
		registerTestPane(b, s, id, "name-"+id, p)
	}
	h := s.routes()
	for _, path := range []string{"/v1/panes", "/v1/panes?view=ls"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
				b.SetBytes(int64(rec.Body.Len()))
			}
		})
	}
}
