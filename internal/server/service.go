package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/buildinfo"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/fleetlink"
	"github.com/corral-dev/corral/internal/httpapi"
	"github.com/corral-dev/corral/internal/jobs"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/paneset"
	"github.com/corral-dev/corral/internal/panestore"
	"github.com/corral-dev/corral/internal/ruleswatch"
	"github.com/corral-dev/corral/internal/term"
)

// service is the API's service: httpapi holds the routes and the wire,
// the daemon's methods the work, and its fleet bridge the fleet's routes
// and the routes that reach other hosts (httpapi.Fleet, httpapi.Proxy).
type service struct {
	*Server
	*fleetlink.Link
}

var _ httpapi.Service = service{}

// routes is the API.
func (s *Server) routes() http.Handler { return httpapi.New(service{s, s.fleet}) }

// lookup finds the pane or job ref names (a 404 if none).
func (s *Server) lookup(ref string) (found, error) {
	f, err := s.find(ref)
	if err != nil {
		return found{}, httpapi.NotFound(err)
	}
	return f, nil
}

// Exists says whether ref names a pane or a job.
func (s *Server) Exists(ref string) error {
	_, err := s.lookup(ref)
	return err
}

// ListPanes is every pane and job, then the lost panes.
func (s *Server) ListPanes() []api.Pane { return append(s.listJSON(), s.set.Lost()...) }

// PaneRows is ListPanes with corral ls's columns only. A pane's row is
// read from its snapshot alone: none of its command, records or
// worktree is copied.
func (s *Server) PaneRows() []api.PaneRow {
	list := s.list()
	lost := s.set.Lost()
	out := make([]api.PaneRow, 0, len(list)+len(lost))
	for _, f := range list {
		if f.job != nil {
			out = append(out, f.job.JSON().Row())
		} else {
			out = append(out, paneRow(f.pane))
		}
	}
	for _, p := range lost {
		out = append(out, p.Row())
	}
	return out
}

// Pane is one pane or job as the API shows it.
func (s *Server) Pane(ref string) (api.Pane, error) {
	f, err := s.lookup(ref)
	if err != nil {
		return api.Pane{}, err
	}
	return f.json(), nil
}

// Run starts a pane.
func (s *Server) Run(req api.RunRequest) (api.Pane, error) {
	if len(req.Command) == 0 {
		return api.Pane{}, httpapi.BadRequest(errors.New("no command; say what to run after --"))
	}
	if err := checkRunFields(req); err != nil {
		return api.Pane{}, httpapi.BadRequest(err)
	}
	if req.Agent != "" {
		if _, ok := s.currentRules().ByName(req.Agent); !ok {
			return api.Pane{}, httpapi.BadRequest(fmt.Errorf("unknown agent %q; corral rules list shows the agents it knows", req.Agent))
		}
	}
	approve, err := s.policyFor(req)
	if err != nil {
		return api.Pane{}, httpapi.BadRequest(err)
	}
	wt, err := s.worktreeFor(&req)
	if err != nil {
		return api.Pane{}, httpapi.BadRequest(err)
	}
	p, err := s.set.Start(pane.Config{Name: req.Name, Argv: req.Command, Dir: req.Cwd, Env: req.Env,
		Cols: req.Cols, Rows: req.Rows, Agent: req.Agent}, paneset.StartOptions[paneExt]{Remove: req.Remove, Init: func(e *entry) {
		e.Ext.approve.Store(approve)
		holdForPolicy(e.P, approve)
		e.Ext.worktree.Store(wt)
	}})
	if err != nil {
		wt.Undo()
		return api.Pane{}, httpapi.BadRequest(err)
	}
	e, err := s.findPane(p.ID())
	if err != nil { // --rm, and it has already ended and gone
		e = &entry{P: p, Name: req.Name}
		e.Ext.approve.Store(approve)
		e.Ext.worktree.Store(wt)
	}
	return paneJSON(e), nil
}

// Screen is a pane's or job's screen; reading a pane's marks its news
// seen.
func (s *Server) Screen(ref string, ansi bool) (api.Screen, error) {
	f, err := s.lookup(ref)
	if err != nil {
		return api.Screen{}, err
	}
	var snap term.Snapshot
	var out api.Screen
	if j := f.job; j != nil {
		snap = j.Snapshot()
		if ansi {
			out.ANSI = j.ANSI()
		}
	} else {
		p := f.pane.P
		snap = p.Snapshot()
		p.MarkSeen()
		if ansi {
			out.ANSI = p.ANSI()
		}
	}
	out.Pane, out.Cols, out.Rows, out.Title, out.Lines = f.id(), snap.Cols, snap.Rows, snap.Title, snap.Lines
	out.CursorX, out.CursorY = snap.CursorX, snap.CursorY
	return out, nil
}

// Send types text into a pane, once its agent is ready for input.
func (s *Server) Send(ctx context.Context, ref string, req api.SendRequest, wait time.Duration) (api.Pane, error) {
	f, err := s.lookup(ref)
	if err != nil {
		return api.Pane{}, err
	}
	if f.job != nil {
		return api.Pane{}, inputError(f.job.RefuseInput())
	}
	e := f.pane
	if !req.Force {
		if err := awaitReady(ctx, e.P, wait); err != nil {
			return api.Pane{}, inputError(err)
		}
	}
	if err := typeText(e, req.Text, req.Enter, !req.Force); err != nil {
		return api.Pane{}, inputError(err)
	}
	return paneJSON(e), nil
}

// Answer answers what a pane or job is blocked on.
func (s *Server) Answer(ref, choice string) (api.AnswerResult, error) {
	f, err := s.lookup(ref)
	if err != nil {
		return api.AnswerResult{}, err
	}
	keys, err := f.answer(choice)
	if err != nil {
		return api.AnswerResult{}, inputError(err)
	}
	return api.AnswerResult{Pane: f.id(), Keys: keys}, nil
}

// inputError is a refused input with the API's status and code.
func inputError(err error) error {
	switch {
	case errors.Is(err, pane.ErrBlocked):
		return httpapi.Conflict("blocked", err)
	case errors.Is(err, pane.ErrNotBlocked):
		return httpapi.Conflict("not_blocked", err)
	case errors.Is(err, pane.ErrExited):
		return httpapi.Conflict("exited", err)
	case errors.Is(err, ErrEnterNotTaken):
		return httpapi.Conflict("not_taken", err)
	case errors.Is(err, ErrStarting):
		return httpapi.Conflict("starting", err)
	case errors.Is(err, jobs.ErrNoInput):
		return httpapi.Conflict("no_input", err)
	case errors.Is(err, pane.ErrUnknownPrompt):
		return httpapi.Conflict("unknown_prompt", err)
	case errors.Is(err, pane.ErrNoAnswer):
		return httpapi.Coded(http.StatusBadRequest, "no_answer", err)
	case errors.Is(err, pane.ErrBusy), errors.Is(err, pane.ErrNotReading):
		return httpapi.Coded(http.StatusServiceUnavailable, "busy", err)
	}
	return err
}

// Kill signals a pane's program or a job, and waits briefly for its end
// so that the answer shows the exit.
func (s *Server) Kill(ref string, sig syscall.Signal, escalate bool, grace time.Duration) (api.Pane, error) {
	f, err := s.lookup(ref)
	if err != nil {
		return api.Pane{}, err
	}
	if err := kill(f.killer(), sig, escalate, grace); err != nil {
		return api.Pane{}, err
	}
	return f.json(), nil
}

// Remove removes an ended pane or job (force: ends it first), and with
// withWorktree the git worktree corral made for it.
func (s *Server) Remove(ref string, force, withWorktree bool) (api.Pane, error) {
	f, err := s.lookup(ref)
	if err != nil {
		return api.Pane{}, err
	}
	if withWorktree {
		if err := s.worktreeRemovable(f); err != nil {
			return api.Pane{}, err
		}
	}
	out := f.json()
	if err := s.remove(f.id(), force); err != nil {
		if errors.Is(err, paneset.ErrStillRunning) {
			return api.Pane{}, httpapi.Conflict("running", err)
		}
		return api.Pane{}, err
	}
	out.State = StateRemoved
	if withWorktree {
		if err := s.removeWorktree(f.pane); err != nil {
			return api.Pane{}, err
		}
	}
	return out, nil
}

// Hook takes a report from an agent's hook. It must carry the pane's
// token, which only that pane's environment holds; anything else is
// refused and counted.
func (s *Server) Hook(req api.HookRequest) (api.HookResult, error) {
	if req.Pane == "" && req.TmuxPane != "" {
		// The daemon's socket is its user's alone: a report naming a
		// watched tmux pane comes from that user's agent in it.
		e := s.set.FindTmux(req.TmuxSocket, req.TmuxPane)
		if e == nil {
			s.hooksRefused.Add(1)
			return api.HookResult{}, httpapi.Coded(http.StatusForbidden, "not_watched", fmt.Errorf("hook report refused: tmux pane %s of %s is not watched (corral tmux watch)", req.TmuxPane, req.TmuxSocket))
		}
		return s.applyHook(e, req)
	}
	e, err := s.set.FindStarting(req.Pane)
	if err != nil || req.Token == "" || subtle.ConstantTimeCompare([]byte(req.Token), []byte(e.Token)) != 1 {
		s.hooksRefused.Add(1)
		if e != nil {
			e.Refused.Add(1)
		}
		return api.HookResult{}, httpapi.Coded(http.StatusForbidden, "bad_token", errors.New("hook report refused: wrong or missing pane token"))
	}
	return s.applyHook(e, req)
}

// applyHook applies a hook report whose pane is known and proven.
func (s *Server) applyHook(e *entry, req api.HookRequest) (api.HookResult, error) {
	rep, err := agents.ParseHook(req.Agent, req.Payload)
	if err != nil {
		e.P.ApplyHook(detect.Hook{Ignore: true}) // counted
		return api.HookResult{}, httpapi.BadRequest(err)
	}
	e.HooksSeen.Add(1)
	if !rep.Hidden {
		s.set.NoteSession(e, req.Agent, panestore.SessionOf(rep.Session, req.Payload))
	}
	// A request a rule decided never waits on anyone: the agent goes on.
	decided := s.decidePermission(e, rep, req.Payload)
	if decided != nil {
		rep.State, rep.Kind, rep.Message = combine.Working, "", ""
	}
	e.P.ApplyHook(detect.Hook{State: rep.State, Kind: rep.Kind, Message: rep.Message, Session: rep.Session,
		NewSession: rep.NewSession, Clear: rep.Clear, Ignore: rep.Ignore, Reminder: rep.Reminder})
	return api.HookResult{Pane: e.P.ID(), Event: rep.Event, Ignored: rep.Why, Decision: decided}, nil
}

// Status is the daemon's own.
func (s *Server) Status() api.Status {
	units := s.set.Len()
	return api.Status{Socket: s.opts.Socket, PID: os.Getpid(), Panes: units, HooksRefused: s.hooksRefused.Load(),
		Build: buildinfo.Self(), Started: s.started.UTC().Format(time.RFC3339)}
}

// Rules describes the manifests in force, and what was wrong with the
// user's.
func (s *Server) Rules() api.Rules {
	s.mu.Lock()
	set, problems := s.rules, s.rulesProblems
	s.mu.Unlock()
	return ruleswatch.Describe(set, problems)
}
