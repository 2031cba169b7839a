package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/panestore"
)

// startOpts is what a start carries besides the pane's config.
type startOpts struct {
	remove   bool // removed when its program exits (--rm)
	approve  *approver
	worktree *worktree
	// base is the command the table keeps as the user's when it is not
	// cfg's (a restore starts the user's command resumed); sessions are
	// the conversations seen before.
	base     []string
	sessions []panestore.Session
}

// start runs a new pane; with o.remove, it is removed when its program
// exits. The program is started outside mu: integration files are written
// and the fork happens while other requests go on.
func (s *Server) start(cfg pane.Config, o startOpts) (*pane.Pane, error) {
	remove := o.remove
	id, set, err := s.reserveAs(cfg.ID, cfg.Name)
	if err != nil {
		return nil, err
	}
	cfg.ID = id
	cfg.Rules = set
	cfg.Starting = true
	name := cfg.Name
	userArgv, userEnv := cfg.Argv, cfg.Env
	token := newToken()
	cfg.Env = append(cfg.Env, "CORRAL_PANE="+cfg.ID, "CORRAL_TOKEN="+token, "CORRAL_SOCKET="+s.opts.Socket)
	var launch agents.Launch
	if exe, err := os.Executable(); err == nil {
		cwd := cfg.Dir
		if cwd == "" {
			cwd, _ = os.Getwd()
		}
		launch = agents.IntegrateRun(cfg.Argv, agents.Options{Hook: []string{exe, "hook"}, Env: append(os.Environ(), cfg.Env...),
			Dir: filepath.Join(s.opts.StateDir, "integrations"), Cwd: cwd})
		cfg.Argv = launch.Argv
		cfg.Env = append(cfg.Env, launch.Env...)
	} else {
		launch = agents.Launch{Argv: cfg.Argv, Missing: map[string]string{}}
		for _, a := range []string{"claude-code", "codex", "gemini"} {
			launch.Missing[a] = fmt.Sprintf("corral cannot add %s's hooks: it cannot find its own executable (%v)", a, err)
		}
	}
	files := launch.Files
	registered := make(chan bool, 1)
	added := append([]string(nil), cfg.Env[len(userEnv):]...)
	s.prepareHold(&cfg)
	cfg.OnExit = func(*pane.Pane) {
		for _, f := range files {
			_ = os.Remove(f)
		}
		s.table.Touch(id)
		if remove {
			go func() {
				if <-registered {
					_ = s.remove(id, false)
				}
			}()
		}
	}
	cfg.OnChange = func(p *pane.Pane, c detect.Change) { s.record(p.ID(), name, p.Info().Agent, c) }
	p, err := pane.Start(cfg)
	if err != nil {
		s.unreserve(id)
		for _, f := range files {
			_ = os.Remove(f)
		}
		return nil, err
	}
	e := &entry{p: p, name: name, token: token, launch: &launch}
	e.approve.Store(o.approve)
	holdForPolicy(p, o.approve)
	e.worktree.Store(o.worktree)
	if o.base != nil {
		userArgv = o.base
	}
	s.noteHeld(e, p, cfg, userArgv, userEnv, added, remove)
	if e.held != nil {
		e.held.Keep(o.sessions, o.approve.saved(), o.worktree.saved())
	}
	ok := s.register(id, e)
	registered <- ok
	if !ok {
		return nil, errors.New("the daemon is shutting down")
	}
	if e.held != nil {
		s.table.SaveRows(map[string]bool{id: true}) // before the caller learns the id: a crash now loses nothing
	}
	if launch.Watch {
		go e.watchIntegration(p)
	}
	return p, nil
}

// record logs and publishes one state change.
func (s *Server) record(id, name, agent string, c detect.Change) {
	if c.Held {
		s.policyHeld(id, c) // not a state of the pane's: nothing to log
		return
	}
	d := c.Decision
	ev := eventlog.Event{Time: c.At, Pane: id, Name: name, Agent: agent, State: string(d.State), Kind: d.Kind,
		Message: d.Message, Source: string(d.Source), Rule: d.Rule, Previous: string(c.Previous.State), PreviousKind: c.Previous.Kind}
	if d.State == combine.Exited || (d.Source == combine.SourceStream && (d.State == combine.Done || d.State == combine.Error)) {
		code := d.ExitCode
		ev.ExitCode = &code
	}
	ev = s.logEvent(ev)
	s.table.Touch(id)
	if !s.policyTakes(id, ev) {
		s.notify.Event(ev)
	}
}

// startJob registers and runs a headless job: held (it outlives the
// daemon, see jobstore.go) when it can be, otherwise guarded (it ends
// with the daemon).
func (s *Server) startJob(name string, o headless.Options, keep jobKeep) (*job, error) {
	id, _, err := s.reserve(name)
	if err != nil {
		return nil, err
	}
	agent := o.Agent
	o.Mark = "CORRAL_JOB=" + id
	o.Env = append(o.Env[:len(o.Env):len(o.Env)], "CORRAL_SOCKET="+s.opts.Socket)
	o.Guard = []string{holderExe, "guard"}
	var onEnd func(headless.Outcome, time.Time)
	if heldMode(o) {
		rec, err := s.holdJob(id, name, &o, keep)
		if err != nil {
			s.opts.Logf("job %s: %v; it runs guarded, and ends with this daemon", id, err)
		} else {
			onEnd = s.keepOutcome(o.Spool, rec)
		}
	}
	j := startJob(id, name, o, func(c detect.Change) { s.record(id, name, agent, c) }, onEnd)
	j.fleet = keep.Fleet
	if !s.registerJob(j) {
		return nil, errors.New("the daemon is shutting down")
	}
	return j, nil
}

// logEvent numbers an event, writes it to the log and publishes it, in
// the order of the numbers.
func (s *Server) logEvent(ev eventlog.Event) eventlog.Event {
	s.evMu.Lock()
	defer s.evMu.Unlock()
	ev, err := s.log.Append(ev)
	if err != nil {
		s.opts.Logf("event log: %v", err)
	}
	s.hub.Publish(ev)
	return ev
}
