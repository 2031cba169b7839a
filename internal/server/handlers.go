package server

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/buildinfo"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/panestore"
	"github.com/corral-dev/corral/internal/term"
)

// routes is the API, one route per line.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	for _, r := range []struct {
		pattern string
		handler http.HandlerFunc
	}{
		{"GET /v1/panes", s.handleList},
		{"POST /v1/panes", s.handleRun},
		{"GET /v1/panes/{id}", s.handleGet},
		{"GET /v1/panes/{id}/screen", s.handleScreen},
		{"POST /v1/panes/{id}/send", s.handleSend},
		{"POST /v1/panes/{id}/answer", s.handleAnswer},
		{"POST /v1/panes/{id}/kill", s.handleKill},
		{"DELETE /v1/panes/{id}", s.handleRemove},     // ?force=1 ends a running one first
		{"GET /v1/panes/{id}/attach", s.handleAttach}, // WebSocket: output out, input in
		{"GET /v1/events", s.handleEvents},            // NDJSON; ?since=RFC3339&follow=1&after=SEQ
		{"GET /v1/events/ws", s.handleEventsWS},       // WebSocket, one event per text message
		{"POST /v1/jobs", s.handleExec},
		{"GET /v1/jobs/{id}/stream", s.handleJobStream}, // NDJSON: every event, then {"type":"outcome"}
		{"POST /v1/hook", s.handleHook},
		{"POST /v1/board", s.handleBoard},
		{"GET /v1/status", s.handleStatus},
		{"GET /v1/rules", s.handleRules},
		{"POST /v1/shutdown", s.handleShutdown},
		{"POST /v1/handover", s.handleHandover},
		{"POST /v1/restore", s.handleRestore},
		{"GET /v1/tmux", s.handleTmuxList},
		{"POST /v1/tmux/watch", s.handleTmuxWatch},
		{"POST /v1/tmux/unwatch", s.handleTmuxUnwatch},
		// Profiles of the daemon (go tool pprof), on the unix socket only:
		// curl --unix-socket SOCK http://corral/debug/pprof/heap > heap.pb
		{"GET /debug/pprof/", pprof.Index},
		{"GET /debug/pprof/profile", pprof.Profile},
		{"GET /debug/pprof/trace", pprof.Trace},
		{"GET /debug/pprof/symbol", pprof.Symbol},
	} {
		mux.HandleFunc(r.pattern, r.handler)
	}
	s.fleetRoutes(mux)
	return mux
}

// MaxBody bounds a request body.
const MaxBody = 1 << 20

// Bounds on what a new pane's request may carry, besides MaxBody.
const (
	MaxNameLen  = 64
	MaxArgs     = 4096
	MaxEnvVars  = 4096
	MaxFieldLen = 64 << 10
)

// checkRunFields bounds each field of a new pane's request.
func checkRunFields(req api.RunRequest) error {
	if len([]rune(req.Name)) > MaxNameLen || strings.ContainsAny(req.Name, "\x00\n\r\t") {
		return fmt.Errorf("name must be at most %d characters, on one line", MaxNameLen)
	}
	if len(req.Command) > MaxArgs || len(req.Env) > MaxEnvVars {
		return fmt.Errorf("at most %d command words and %d environment variables", MaxArgs, MaxEnvVars)
	}
	for _, f := range append(append([]string{req.Cwd}, req.Command...), req.Env...) {
		if len(f) > MaxFieldLen || strings.ContainsRune(f, 0) {
			return fmt.Errorf("a command word, environment variable or folder is longer than %d bytes or holds a NUL byte", MaxFieldLen)
		}
	}
	if req.Cols != 0 || req.Rows != 0 {
		return pane.CheckSize(req.Cols, req.Rows)
	}
	return nil
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("request body: %v", err))
		return false
	}
	return true
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, status int, code string, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.Error{Error: err.Error(), Code: code})
}

// lookup finds the pane or job the route's {id} names, or answers 404.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) (found, bool) {
	f, err := s.find(r.PathValue("id"))
	if err != nil {
		fail(w, http.StatusNotFound, "not_found", err)
		return found{}, false
	}
	return f, true
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	out := append(s.listJSON(), s.table.LostPanes()...)
	if r.URL.Query().Get("view") == "ls" {
		// corral ls's columns: a tenth of the bytes to encode and decode
		// (each pane's command, records and cwd are most of a pane).
		rows := make([]api.PaneRow, len(out))
		for i, p := range out {
			rows[i] = p.Row()
		}
		reply(w, rows)
		return
	}
	reply(w, out)
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	if f, ok := s.lookup(w, r); ok {
		reply(w, f.json())
	}
}

func (s *Server) handleRun(w http.ResponseWriter, r *http.Request) {
	var req api.RunRequest
	if !decode(w, r, &req) {
		return
	}
	if len(req.Command) == 0 {
		fail(w, http.StatusBadRequest, "bad_request", errors.New("no command; say what to run after --"))
		return
	}
	if err := checkRunFields(req); err != nil {
		fail(w, http.StatusBadRequest, "bad_request", err)
		return
	}
	if req.Agent != "" {
		if _, ok := s.currentRules().ByName(req.Agent); !ok {
			fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("unknown agent %q; corral rules list shows the agents it knows", req.Agent))
			return
		}
	}
	approve, err := s.policyFor(req)
	if err != nil {
		fail(w, http.StatusBadRequest, "bad_request", err)
		return
	}
	wt, err := s.worktreeFor(&req)
	if err != nil {
		fail(w, http.StatusBadRequest, "bad_request", err)
		return
	}
	p, err := s.start(pane.Config{Name: req.Name, Argv: req.Command, Dir: req.Cwd, Env: req.Env,
		Cols: req.Cols, Rows: req.Rows, Agent: req.Agent}, startOpts{remove: req.Remove, approve: approve, worktree: wt})
	if err != nil {
		wt.undo()
		fail(w, http.StatusBadRequest, "bad_request", err)
		return
	}
	e, err := s.findPane(p.ID())
	if err != nil { // --rm, and it has already ended and gone
		e = &entry{p: p, name: req.Name}
		e.approve.Store(approve)
		e.worktree.Store(wt)
	}
	reply(w, paneJSON(e))
}

func (s *Server) handleScreen(w http.ResponseWriter, r *http.Request) {
	f, ok := s.lookup(w, r)
	if !ok {
		return
	}
	ansi := r.URL.Query().Get("ansi") == "1"
	var snap term.Snapshot
	var out api.Screen
	if j := f.job; j != nil {
		snap = j.Snapshot()
		if ansi {
			out.ANSI = j.ansi()
		}
	} else {
		p := f.pane.p
		snap = p.Snapshot()
		p.MarkSeen()
		if ansi {
			out.ANSI = p.ANSI()
		}
	}
	out.Pane, out.Cols, out.Rows, out.Title, out.Lines = f.id(), snap.Cols, snap.Rows, snap.Title, snap.Lines
	out.CursorX, out.CursorY = snap.CursorX, snap.CursorY
	reply(w, out)
}

var signals = map[string]syscall.Signal{
	"": syscall.SIGTERM, "TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "HUP": syscall.SIGHUP,
	"INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
	"STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT,
}

func (s *Server) handleKill(w http.ResponseWriter, r *http.Request) {
	f, ok := s.lookup(w, r)
	if !ok {
		return
	}
	var req api.KillRequest
	if !decode(w, r, &req) {
		return
	}
	grace := api.DefaultKillGrace
	if req.Grace != "" {
		d, err := time.ParseDuration(req.Grace)
		if err != nil || d < 0 || d > api.MaxKillGrace {
			fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("grace %q: give a duration from 0s to %v", req.Grace, api.MaxKillGrace))
			return
		}
		grace = d
	}
	escalate := req.Signal == ""
	if escalate {
		req.Signal = "TERM"
	}
	name := strings.TrimPrefix(strings.ToUpper(req.Signal), "SIG")
	sig, ok := signals[name]
	if !ok {
		if n, err := strconv.Atoi(name); err == nil && n > 0 && n < 65 {
			sig, ok = syscall.Signal(n), true
		}
	}
	if !ok {
		fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("unknown signal %q; use TERM, KILL, HUP, INT, QUIT, USR1, USR2 or a number", req.Signal))
		return
	}
	if err := kill(f.killer(), sig, escalate, grace); err != nil {
		fail(w, http.StatusInternalServerError, "internal", err)
		return
	}
	reply(w, f.json())
}

// killer is what kill ends: a pane's program, or a job (which any signal
// ends).
type killer interface {
	Kill(sig syscall.Signal) error
	Done() <-chan struct{}
}

func (f found) killer() killer {
	if f.job != nil {
		return f.job
	}
	return f.pane.p
}

// kill signals a pane or job and waits briefly for its end, so the
// answer shows the exit. With escalate, a program still running after
// grace is sent SIGKILL.
func kill(u killer, sig syscall.Signal, escalate bool, grace time.Duration) error {
	select {
	case <-u.Done():
		return nil // ended already: nothing to signal
	default:
	}
	if err := u.Kill(sig); err != nil {
		return err
	}
	wait := 2 * time.Second
	if escalate {
		select {
		case <-u.Done():
			return nil
		case <-time.After(grace):
		}
		if err := u.Kill(syscall.SIGKILL); err != nil {
			return err
		}
	}
	select {
	case <-u.Done():
	case <-time.After(wait):
	}
	return nil
}

// handleRemove removes an ended pane or job (?force=1: ends it first).
func (s *Server) handleRemove(w http.ResponseWriter, r *http.Request) {
	f, ok := s.lookup(w, r)
	if !ok {
		return
	}
	withWorktree := r.URL.Query().Get("worktree") == "1"
	if withWorktree && !s.worktreeRemovable(w, f) {
		return
	}
	out := f.json()
	if err := s.remove(f.id(), r.URL.Query().Get("force") == "1"); err != nil {
		code, status := "internal", http.StatusInternalServerError
		if errors.Is(err, errStillRunning) {
			code, status = "running", http.StatusConflict
		}
		fail(w, status, code, err)
		return
	}
	out.State = StateRemoved
	if withWorktree && !s.removeWorktree(w, f.pane) {
		return
	}
	reply(w, out)
}

// handleHook takes a report from an agent's hook. It must carry the pane's
// token, which only that pane's environment holds; anything else is
// refused and counted.
func (s *Server) handleHook(w http.ResponseWriter, r *http.Request) {
	var req api.HookRequest
	if !decode(w, r, &req) {
		return
	}
	if req.Pane == "" && req.TmuxPane != "" {
		// The daemon's socket is its user's alone: a report naming a
		// watched tmux pane comes from that user's agent in it.
		e := s.findTmux(req.TmuxSocket, req.TmuxPane)
		if e == nil {
			s.hooksRefused.Add(1)
			fail(w, http.StatusForbidden, "not_watched", fmt.Errorf("hook report refused: tmux pane %s of %s is not watched (corral tmux watch)", req.TmuxPane, req.TmuxSocket))
			return
		}
		s.applyHook(w, e, req)
		return
	}
	e, err := s.findStarting(req.Pane)
	if err != nil || req.Token == "" || subtle.ConstantTimeCompare([]byte(req.Token), []byte(e.token)) != 1 {
		s.hooksRefused.Add(1)
		if e != nil {
			e.refused.Add(1)
		}
		fail(w, http.StatusForbidden, "bad_token", errors.New("hook report refused: wrong or missing pane token"))
		return
	}
	s.applyHook(w, e, req)
}

// applyHook applies a hook report whose pane is known and proven.
func (s *Server) applyHook(w http.ResponseWriter, e *entry, req api.HookRequest) {
	rep, err := agents.ParseHook(req.Agent, req.Payload)
	if err != nil {
		e.p.ApplyHook(detect.Hook{Ignore: true}) // counted
		fail(w, http.StatusBadRequest, "bad_request", err)
		return
	}
	e.hooksSeen.Add(1)
	if !rep.Hidden {
		s.noteSession(e, req.Agent, panestore.SessionOf(rep.Session, req.Payload))
	}
	// A request a rule decided never waits on anyone: the agent goes on.
	decided := s.decidePermission(e, rep, req.Payload)
	if decided != nil {
		rep.State, rep.Kind, rep.Message = combine.Working, "", ""
	}
	e.p.ApplyHook(detect.Hook{State: rep.State, Kind: rep.Kind, Message: rep.Message, Session: rep.Session,
		NewSession: rep.NewSession, Clear: rep.Clear, Ignore: rep.Ignore})
	reply(w, api.HookResult{Pane: e.p.ID(), Event: rep.Event, Ignored: rep.Why, Decision: decided})
}

func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	units := len(s.panes) + len(s.jobs)
	s.mu.Unlock()
	reply(w, api.Status{Socket: s.opts.Socket, PID: os.Getpid(), Panes: units, HooksRefused: s.hooksRefused.Load(),
		Build: buildinfo.Self(), Started: s.started.UTC().Format(time.RFC3339)})
}

func (s *Server) handleShutdown(w http.ResponseWriter, r *http.Request) {
	reply(w, map[string]string{"status": "shutting down"})
	go s.Shutdown()
}

// paneJSON is a pane as the API shows it.
func paneJSON(e *entry) api.Pane {
	in := e.p.Info()
	d := in.Decision
	integration, problem := e.integration(in.Agent)
	out := api.Pane{ID: in.ID, Name: e.name, Agent: in.Agent, State: string(d.State), Kind: d.Kind, Message: d.Message,
		Since: in.Since.UTC().Format(eventlog.TimeFormat), Source: string(d.Source), Rule: d.Rule, PID: in.PID,
		Cwd: in.Dir, Cols: in.Cols, Rows: in.Rows, Command: in.Argv, Foreground: in.Foreground, Records: []api.Record{},
		Integration: integration, IntegrationError: problem, HooksRefused: e.refused.Load(), HooksIgnored: in.HooksIgnored}
	_, out.Backend = e.p.Outside()
	if t := e.tmux; t != nil {
		out.Tmux = &api.TmuxPane{Socket: t.Socket(), Pane: t.TmuxID, Target: t.Target()}
	}
	if a := e.approve.Load(); a != nil {
		out.Policy, out.Approval = a.policy.Source, a.latest()
	}
	if wt := e.worktree.Load(); wt != nil {
		out.Worktree = wt.status()
	}
	if in.Progress >= 0 {
		v := in.Progress
		out.Progress = &v
	}
	if in.Exited {
		code := in.ExitCode
		out.ExitCode = &code
	}
	for _, r := range in.Records {
		rec := api.Record{ID: r.ID, State: string(r.State), Kind: string(r.Kind), App: r.App, Title: r.Title, Message: r.Msg,
			Updated: r.Updated.UTC().Format(eventlog.TimeFormat)}
		if r.Progress >= 0 {
			v := r.Progress
			rec.Progress = &v
		}
		out.Records = append(out.Records, rec)
	}
	return out
}
