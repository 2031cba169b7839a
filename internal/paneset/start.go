package paneset

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/panestore"
)

// StartOptions is what a start carries besides the pane's config.
type StartOptions[X any] struct {
	Remove bool // removed when its program exits (--rm)
	// Base is the command the table keeps as the user's when it is not
	// cfg's (a restore starts the user's command resumed); Sessions are
	// the conversations seen before.
	Base     []string
	Sessions []panestore.Session
	// Init gives the entry the server's part (Ext) before it is
	// registered.
	Init func(e *Entry[X])
}

// Start runs a new pane, under a holder when the daemon can make one;
// with o.Remove, it is removed when its program exits. The program is
// started outside the set's lock: integration files are written and the
// fork happens while other requests go on.
func (s *Set[X, J]) Start(cfg pane.Config, o StartOptions[X]) (*pane.Pane, error) {
	remove := o.Remove
	id, set, err := s.ReserveAs(cfg.ID, cfg.Name)
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
					_ = s.Remove(id, false)
				}
			}()
		}
	}
	cfg.OnChange = s.OnChange(name)
	p, err := pane.Start(cfg)
	if err != nil {
		s.Unreserve(id)
		for _, f := range files {
			_ = os.Remove(f)
		}
		return nil, err
	}
	e := &Entry[X]{P: p, Name: name, Token: token, Launch: &launch}
	if o.Init != nil {
		o.Init(e)
	}
	if o.Base != nil {
		userArgv = o.Base
	}
	noteHeld(e, cfg, userArgv, userEnv, added, remove)
	if e.Held != nil {
		var policy *panestore.Policy
		var wt *panestore.Worktree
		if s.opts.Saved != nil {
			policy, wt = s.opts.Saved(e)
		}
		e.Held.Keep(o.Sessions, policy, wt)
	}
	ok := s.Register(id, e)
	registered <- ok
	if !ok {
		return nil, errors.New("the daemon is shutting down")
	}
	if e.Held != nil {
		s.table.SaveRows(map[string]bool{id: true}) // before the caller learns the id: a crash now loses nothing
	}
	if launch.Watch {
		go e.watchIntegration()
	}
	return p, nil
}

// OnChange is the OnChange of a pane named name, started here or
// elsewhere (a watched tmux server's): its changes go to Options.Record.
func (s *Set[X, J]) OnChange(name string) func(*pane.Pane, detect.Change) {
	return func(p *pane.Pane, c detect.Change) {
		if s.opts.Record != nil {
			s.opts.Record(p.ID(), name, p.Info().Agent, c)
		}
	}
}
