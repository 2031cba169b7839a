package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/api"
)

// Service is the daemon as the API's handlers see it: one method a
// route, in five parts. An error is answered with its status and code
// when it is an *Error, 500 otherwise.
type Service interface {
	Panes
	Events
	Admin
	Fleet
	Proxy
}

// Panes is what the pane routes need of the daemon. A ref ({id}) is a
// pane's or a job's id or name.
type Panes interface {
	ListPanes() []api.Pane // panes, jobs and lost panes, in start order
	// PaneRows is ListPanes with corral ls's columns only, each equal to
	// its pane's Row.
	PaneRows() []api.PaneRow
	// Exists says whether ref names a pane or job (an error answered 404
	// if not), before a request's body is read.
	Exists(ref string) error
	Pane(ref string) (api.Pane, error)
	Run(req api.RunRequest) (api.Pane, error)
	Screen(ref string, ansi bool) (api.Screen, error)
	// Send types into a pane, waiting up to wait while its agent starts
	// (a context that ends ends the wait).
	Send(ctx context.Context, ref string, req api.SendRequest, wait time.Duration) (api.Pane, error)
	Answer(ref, choice string) (api.AnswerResult, error)
	// Kill signals a pane's program or a job; with escalate, SIGKILL
	// follows after grace.
	Kill(ref string, sig syscall.Signal, escalate bool, grace time.Duration) (api.Pane, error)
	// Remove removes an ended pane or job (force: ends it first; worktree:
	// its git worktree too).
	Remove(ref string, force, worktree bool) (api.Pane, error)
	// Attach joins a terminal to a pane; attaching marks a finished turn
	// seen.
	Attach(ref string) (Session, error)
	// Exec starts a headless job; JobFeed follows one (an error for a
	// pane).
	Exec(req api.ExecRequest) (api.Pane, error)
	JobFeed(ref string) (JobFeed, error)
	Hook(req api.HookRequest) (api.HookResult, error)
	Status() api.Status
	Rules() api.Rules
	Shutdown()
}

// route is one line of the route table: a pattern of http.ServeMux and
// its handler.
type route struct {
	Pattern string
	Handler http.HandlerFunc
}

// New is the API: every route, served through svc.
func New(svc Service) http.Handler {
	mux := http.NewServeMux()
	h := &handlers{svc: svc, mux: mux}
	for _, r := range h.routes() {
		mux.HandleFunc(r.Pattern, r.Handler)
	}
	return mux
}

// routes is the route table (docs/api.md and docs/fleet.md name every
// pattern: TestDocsNameEveryRoute).
func (h *handlers) routes() []route {
	svc := h.svc
	return append([]route{
		{"GET /v1/panes", h.list}, // ?view=ls: only corral ls's columns
		{"POST /v1/panes", decodeCall(svc.Run)},
		{"GET /v1/panes/{id}", h.get},
		{"GET /v1/panes/{id}/screen", h.screen}, // ?ansi=1: with the screen as a terminal draws it
		{"POST /v1/panes/{id}/send", decodeRefCall(svc, h.send)},
		{"POST /v1/panes/{id}/answer", decodeRefCall(svc, h.answer)},
		{"POST /v1/panes/{id}/kill", decodeRefCall(svc, h.kill)},
		{"DELETE /v1/panes/{id}", h.remove},     // ?force=1 ends a running one first; ?worktree=1
		{"GET /v1/panes/{id}/attach", h.attach}, // WebSocket: output out, input in
		{"POST /v1/jobs", decodeCall(svc.Exec)},
		{"GET /v1/jobs/{id}/stream", h.jobStream}, // NDJSON: every event, then {"type":"outcome"}; ?from=N
		{"GET /v1/events", h.events},              // NDJSON; ?since=RFC3339&follow=1&after=SEQ
		{"GET /v1/events/ws", h.eventsWS},         // WebSocket, one event per text message
		{"POST /v1/hook", decodeCall(svc.Hook)},   // the daemon checks the report carries the pane's token
		{"POST /v1/board", decodeCall(svc.Board)},
		{"GET /v1/status", h.status},
		{"GET /v1/rules", h.rules},
		{"POST /v1/shutdown", h.shutdown},
		{"POST /v1/handover", h.handover},
		{"POST /v1/restore", decodeCall(svc.Restore)},
		{"GET /v1/tmux", h.tmuxServers},
		{"POST /v1/tmux/watch", decodeCall(svc.WatchTmux)},
		{"POST /v1/tmux/unwatch", decodeCall(h.unwatchTmux)},
		{"GET /v1/fleet/events", h.fleetEvents},       // NDJSON; ?host=H&pane=P&since=RFC3339&follow=1
		{"/v1/fleet/hosts/{host}/{rest...}", h.proxy}, // any route, on another host
		// Profiles of the daemon (go tool pprof), on the unix socket only:
		// curl --unix-socket SOCK http://corral/debug/pprof/heap > heap.pb
		{"GET /debug/pprof/", pprof.Index},
		{"GET /debug/pprof/profile", pprof.Profile},
		{"GET /debug/pprof/trace", pprof.Trace},
		{"GET /debug/pprof/symbol", pprof.Symbol},
	}, fleetRoutes(svc)...)
}

type handlers struct {
	svc Service
	mux *http.ServeMux // the whole API, for a proxied request that is this daemon's own
	// eventSockets counts the open event WebSockets.
	eventSockets atomic.Int32
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("view") == "ls" {
		// corral ls's columns: a tenth of the bytes to encode and decode
		// (each pane's command, records and cwd are most of a pane).
		Reply(w, h.svc.PaneRows())
		return
	}
	Reply(w, h.svc.ListPanes())
}

func (h *handlers) get(w http.ResponseWriter, r *http.Request) {
	p, err := h.svc.Pane(r.PathValue("id"))
	answer(w, p, err)
}

func (h *handlers) screen(w http.ResponseWriter, r *http.Request) {
	s, err := h.svc.Screen(r.PathValue("id"), r.URL.Query().Get("ansi") == "1")
	answer(w, s, err)
}

func (h *handlers) send(r *http.Request, ref string, req api.SendRequest) (api.Pane, error) {
	wait := api.DefaultReadyWait
	if req.ReadyMS > 0 {
		wait = time.Duration(req.ReadyMS) * time.Millisecond
	}
	return h.svc.Send(r.Context(), ref, req, wait)
}

func (h *handlers) answer(r *http.Request, ref string, req api.AnswerRequest) (api.AnswerResult, error) {
	return h.svc.Answer(ref, req.Choice)
}

var signals = map[string]syscall.Signal{
	"": syscall.SIGTERM, "TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "HUP": syscall.SIGHUP,
	"INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
	"STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT,
}

func (h *handlers) kill(r *http.Request, ref string, req api.KillRequest) (api.Pane, error) {
	grace := api.DefaultKillGrace
	if req.Grace != "" {
		d, err := time.ParseDuration(req.Grace)
		if err != nil || d < 0 || d > api.MaxKillGrace {
			return api.Pane{}, BadRequest(fmt.Errorf("grace %q: give a duration from 0s to %v", req.Grace, api.MaxKillGrace))
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
		return api.Pane{}, BadRequest(fmt.Errorf("unknown signal %q; use TERM, KILL, HUP, INT, QUIT, USR1, USR2 or a number", req.Signal))
	}
	return h.svc.Kill(ref, sig, escalate, grace)
}

func (h *handlers) remove(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p, err := h.svc.Remove(r.PathValue("id"), q.Get("force") == "1", q.Get("worktree") == "1")
	answer(w, p, err)
}

func (h *handlers) status(w http.ResponseWriter, r *http.Request) { Reply(w, h.svc.Status()) }
func (h *handlers) rules(w http.ResponseWriter, r *http.Request)  { Reply(w, h.svc.Rules()) }
func (h *handlers) tmuxServers(w http.ResponseWriter, r *http.Request) {
	Reply(w, h.svc.TmuxServers())
}

func (h *handlers) shutdown(w http.ResponseWriter, r *http.Request) {
	Reply(w, map[string]string{"status": "shutting down"})
	go h.svc.Shutdown()
}
