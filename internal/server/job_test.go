package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	rulesdata "github.com/corral-dev/corral/agents"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/corral-dev/corral/internal/jobs"
	"github.com/corral-dev/corral/internal/notify"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/rules"
)

// testServer is a daemon's tables without its socket: what the routes
// that serve panes and jobs read.
func testServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{opts: Options{StateDir: t.TempDir(), Logf: t.Logf}}
	s.set = s.newSet()
	s.jobs = s.newJobs()
	return s
}

// reserveTestID reserves id and name for a start, as reserve does a new
// id.
func reserveTestID(t testing.TB, s *Server, id, name string) {
	t.Helper()
	got, _, err := s.set.ReserveAs(id, name)
	if err != nil {
		t.Fatal(err)
	}
	if got != id {
		t.Fatalf("the id %s is taken", id)
	}
}

// registerTestPane registers p under id and name.
func registerTestPane(t testing.TB, s *Server, id, name string, p *pane.Pane) {
	t.Helper()
	reserveTestID(t, s, id, name)
	if !s.set.Register(id, &entry{P: p, Name: name}) {
		t.Fatal("the pane was not registered")
	}
}

// addTestPane registers a pane over an outside terminal that shows nothing.
func addTestPane(t *testing.T, s *Server, id, name string) *pane.Pane {
	t.Helper()
	set, errs := rules.Loader{Embedded: rulesdata.Rules}.Load(nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	src := &stuckSource{entered: make(chan struct{}), release: make(chan struct{})}
	p, _, err := pane.Open(pane.Config{ID: id, Name: name, Rules: set, Sweep: time.Hour}, src, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(time.Second) })
	t.Cleanup(src.free)
	registerTestPane(t, s, id, name, p)
	return p
}

// endedTestJob runs a Gemini-like job to its end and registers it.
func endedTestJob(t *testing.T, s *Server, id, name, prompt string) *jobs.Job {
	t.Helper()
	script := `echo '{"type":"init","session_id":"g-1","model":"m"}'
echo '{"type":"message","role":"assistant","content":"Hello there."}'
echo '{"type":"result","status":"success","stats":{}}'`
	j := jobs.Run(id, name, headless.Options{Agent: "gemini", Argv: []string{"sh", "-c", script}, Prompt: prompt}, func(detect.Change) {})
	select {
	case <-j.Done():
	case <-time.After(10 * time.Second):
		j.Close(0)
		t.Fatal("the job did not end")
	}
	reserveTestID(t, s, id, name)
	if !s.set.RegisterJob(id, name, j) {
		t.Fatal("the job was not registered")
	}
	return j
}

// request runs a route's handler with ref as its {id}.
func request(t *testing.T, handler http.HandlerFunc, method, target, ref, body string) (int, []byte) {
	t.Helper()
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.SetPathValue("id", ref)
	rec := httptest.NewRecorder()
	handler(rec, r)
	return rec.Code, rec.Body.Bytes()
}

// failed reads an error answer.
func failed(t *testing.T, body []byte) api.Error {
	t.Helper()
	var e api.Error
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error answer: %v (%s)", err, body)
	}
	return e
}

// The routes that serve panes and jobs alike find a job by its id or name
// and answer for it in the job's own way: its row is "headless" with its
// stream's session and integration, its screen is its readable lines
// (unstyled, no escapes), typing and attaching are refused and say why,
// and its answer is the job's.
func TestJobRoutes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prompt string // a prompt keeps stdin open for the permission relay
		want   string // in the refusal of typing
	}{
		{"without a relay", "", jobs.ErrNoInput.Error()},
		{"with a relay", "hi", "answer its permission requests with corral answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testServer(t)
			addTestPane(t, s, "pn", "shell")
			endedTestJob(t, s, "jt", "view", tc.prompt)

			for _, ref := range []string{"jt", "view"} {
				code, body := request(t, s.routes().ServeHTTP, "GET", "/v1/panes/"+ref, ref, "")
				var p api.Pane
				if err := json.Unmarshal(body, &p); code != 200 || err != nil {
					t.Fatalf("GET %s: %d %v (%s)", ref, code, err, body)
				}
				if p.ID != "jt" || p.Name != "view" || p.Backend != "headless" || p.SessionID != "g-1" || p.Integration != "gemini" ||
					p.IntegrationError != "" || p.State != "done" || p.ExitCode == nil || *p.ExitCode != 0 || p.Progress != nil {
					t.Fatalf("GET %s: %+v", ref, p)
				}
			}

			code, body := request(t, s.routes().ServeHTTP, "GET", "/v1/panes/view/screen?ansi=1", "view", "")
			var scr api.Screen
			if err := json.Unmarshal(body, &scr); code != 200 || err != nil {
				t.Fatalf("screen: %d %v (%s)", code, err, body)
			}
			if scr.Pane != "jt" || !strings.Contains(strings.Join(scr.Lines, "\n"), "assistant: Hello there.") {
				t.Fatalf("screen: %+v", scr)
			}
			if want := strings.Join(scr.Lines, "\r\n"); scr.ANSI != want {
				t.Fatalf("ansi: %q, want %q", scr.ANSI, want)
			}
			rows, err := boardBackend{s}.StyledScreen("view")
			if err != nil || len(rows) != len(scr.Lines) {
				t.Fatalf("styled screen: %v, %d rows for %d lines", err, len(rows), len(scr.Lines))
			}
			for i, r := range rows {
				if len(r) != 1 || r[0].Text != scr.Lines[i] {
					t.Fatalf("styled row %d: %+v, want the plain line %q", i, r, scr.Lines[i])
				}
			}

			for _, rt := range []struct {
				route        string
				handler      http.HandlerFunc
				method, body string
				status       int
				code, says   string
			}{
				{"send", s.routes().ServeHTTP, "POST", `{"text":"hello","enter":true}`, 409, "no_input", tc.want},
				// The job ended: its answer says it is not blocked, and in
				// what state it is.
				{"answer", s.routes().ServeHTTP, "POST", `{"choice":"yes"}`, 409, "not_blocked", "(it is done)"},
				{"attach", s.routes().ServeHTTP, "GET", "", 409, "bad_request", "a headless job has no terminal to attach to"},
				{"rm --worktree", s.routes().ServeHTTP, "DELETE", "", 400, "no_worktree", "pane jt has no worktree"},
			} {
				target := "/v1/panes/view/" + rt.route
				if rt.route == "rm --worktree" {
					target = "/v1/panes/view?worktree=1"
				}
				code, body := request(t, rt.handler, rt.method, target, "view", rt.body)
				if e := failed(t, body); code != rt.status || e.Code != rt.code || !strings.Contains(e.Error, rt.says) {
					t.Errorf("%s: %d %+v, want %d %s saying %q", rt.route, code, e, rt.status, rt.code, rt.says)
				}
			}
			if err := (boardBackend{s}).Send("view", "hello", true); !errors.Is(err, jobs.ErrNoInput) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the board typing into a job: %v, want ErrNoInput saying %q", err, tc.want)
			}
			if pr := (boardBackend{s}).Prompt("view"); fmt.Sprint(pr.Answers) != "[yes no]" || pr.Options {
				t.Errorf("the board's prompt of a job: %+v", pr)
			}
			// A pane has no job stream.
			code, body = request(t, s.routes().ServeHTTP, "GET", "/v1/jobs/shell/stream", "shell", "")
			if e := failed(t, body); code != 400 || !strings.Contains(e.Error, "not a headless job") {
				t.Errorf("a pane's job stream: %d %+v", code, e)
			}
		})
	}
}

// Panes and jobs live in two tables with one space of ids and names: a
// name either kind has, as a name or an id, is refused to a new one; a
// reference finds the kind that has it; the list keeps the start order
// across both; removing a job frees its name and leaves the panes.
func TestPanesAndJobsShareNames(t *testing.T) {
	s := testServer(t)
	s.log, _ = eventlog.Open(t.TempDir(), 0)
	t.Cleanup(func() { s.log.Close() })
	s.hub = eventlog.NewHub()
	s.notify, _ = notify.New(notify.Config{})
	addTestPane(t, s, "pa", "first")
	endedTestJob(t, s, "jb", "second", "")
	addTestPane(t, s, "pc", "third")

	for _, tc := range []struct {
		name  string
		taken bool
	}{
		{"first", true}, {"pa", true}, // a pane's name and id
		{"second", true}, {"jb", true}, // a job's
		{"fourth", false},
	} {
		err := s.set.Taken(tc.name)
		if (err != nil) != tc.taken {
			t.Errorf("the name %s: %v, want taken %v", tc.name, err, tc.taken)
		}
	}
	for _, tc := range []struct {
		ref, id string
		job     bool
	}{
		{"pa", "pa", false}, {"first", "pa", false}, {"jb", "jb", true}, {"second", "jb", true}, {"third", "pc", false},
	} {
		f, err := s.find(tc.ref)
		if err != nil || f.id() != tc.id || (f.job != nil) != tc.job || (f.pane != nil) == tc.job {
			t.Errorf("find %s: %+v %v, want %s (a job: %v)", tc.ref, f, err, tc.id, tc.job)
		}
		if _, err := s.findPane(tc.ref); (err == nil) == tc.job {
			t.Errorf("findPane %s: %v", tc.ref, err)
		}
	}
	if _, err := s.find("nothing"); err == nil || err.Error() != "no pane named nothing; see corral ls" {
		t.Errorf("find of nothing: %v", err)
	}
	ids := func() string {
		var out []string
		for _, p := range s.listJSON() {
			out = append(out, p.ID+"/"+p.Backend)
		}
		return strings.Join(out, " ")
	}
	if got, want := ids(), "pa/stuck jb/headless pc/stuck"; got != want {
		t.Errorf("the list: %s, want %s", got, want)
	}
	code, body := request(t, s.routes().ServeHTTP, "GET", "/v1/status", "", "")
	var st api.Status
	if err := json.Unmarshal(body, &st); code != 200 || err != nil || st.Panes != 3 {
		t.Errorf("status: %d %v %+v", code, err, st)
	}
	if err := s.remove("second", false); err != nil {
		t.Fatal(err)
	}
	if got, want := ids(), "pa/stuck pc/stuck"; got != want {
		t.Errorf("the list after the job's removal: %s, want %s", got, want)
	}
	err := s.set.Taken("second")
	if err != nil {
		t.Errorf("the removed job's name: %v", err)
	}
}
