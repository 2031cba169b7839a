package server

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/agentdef"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/corral-dev/corral/internal/httpapi"
)

// Exec starts a headless job.
func (s *Server) Exec(req api.ExecRequest) (api.Pane, error) {
	if len(req.Command) == 0 {
		return api.Pane{}, httpapi.BadRequest(errors.New("no command; say what to run after --"))
	}
	if err := checkRunFields(api.RunRequest{Name: req.Name, Command: req.Command, Cwd: req.Cwd, Env: req.Env}); err != nil {
		return api.Pane{}, httpapi.BadRequest(err)
	}
	if err := checkRunFields(api.RunRequest{Env: req.CallerEnv}); err != nil {
		return api.Pane{}, httpapi.BadRequest(fmt.Errorf("caller environment: %w", err))
	}
	execAgent, known := agentdef.BuiltIn().ByExec(req.Agent)
	switch {
	case known || req.Agent == "auto":
	case req.Agent == "acp":
		if req.Prompt == "" {
			return api.Pane{}, httpapi.BadRequest(errors.New("an ACP agent takes its prompt from --prompt"))
		}
	default:
		return api.Pane{}, httpapi.BadRequest(fmt.Errorf("agent %q: use %s, auto or acp", req.Agent, strings.Join(agentdef.BuiltIn().ExecNames(), ", ")))
	}
	o := headless.Options{Agent: req.Agent, Argv: req.Command, Dir: req.Cwd, Env: req.Env, BaseEnv: req.CallerEnv,
		Timeout: time.Duration(req.TimeoutMS) * time.Millisecond, Stall: time.Duration(req.StallMS) * time.Millisecond}
	if req.Policy != "" {
		p, err := headless.ParsePolicy(req.PolicySource, []byte(req.Policy))
		if err != nil {
			return api.Pane{}, httpapi.BadRequest(err)
		}
		o.Policy = p
	}
	switch req.Mode {
	case "", "pipe":
	case "pty-lite":
		o.Mode = "pty-lite"
		if execAgent != nil {
			o.PromptRules, _ = s.currentRules().ByName(execAgent.Name)
		}
		req.NoRelay = true // no stdin in pty-lite mode
	default:
		return api.Pane{}, httpapi.BadRequest(fmt.Errorf("mode %q: use pipe or pty-lite", req.Mode))
	}
	if req.Agent == "acp" {
		o.Prompt = req.Prompt
	}
	// Qwen Code writes Claude Code's stream but refuses its relay flags:
	// it has a relay of its own.
	if req.Agent == "claude" && isQwen(req.Command) {
		req.Agent, o.Agent = "qwen", "qwen"
	}
	switch {
	case req.NoRelay:
	case req.Agent == "claude":
		if argv, prompt, ok := headless.ClaudeRelay(req.Command, req.Prompt); ok {
			o.Argv, o.Prompt = argv, prompt
		}
	case req.Agent == "qwen":
		if argv, prompt, ok := headless.QwenRelay(req.Command, req.Prompt); ok {
			o.Argv, o.Prompt = argv, prompt
		}
	}
	j, err := s.startJob(req.Name, o, jobKeep{Policy: req.Policy, PolicySource: req.PolicySource, Fleet: req.Fleet})
	if err != nil {
		return api.Pane{}, httpapi.BadRequest(err)
	}
	return j.json(), nil
}

// JobFeed follows a headless job for its stream.
func (s *Server) JobFeed(ref string) (httpapi.JobFeed, error) {
	f, err := s.lookup(ref)
	if err != nil {
		return nil, err
	}
	if f.job == nil {
		return nil, httpapi.BadRequest(errors.New("not a headless job; corral events shows a pane's changes"))
	}
	return jobFeed{f.job}, nil
}

// jobFeed is a job's stream: its events, a line first for those it
// missed, and its outcome.
type jobFeed struct{ j *job }

func (f jobFeed) Since(next int) ([]any, int, <-chan struct{}, bool) {
	evs, after, missed, more, ended := f.j.Since(next)
	lines := make([]any, 0, len(evs)+1)
	if missed > 0 {
		line := fmt.Sprintf("%s %d events behind the job and missed them", api.FellBehind, missed)
		lines = append(lines, headless.Event{Type: headless.EventDiagnostic, Line: line})
	}
	for _, ev := range evs {
		lines = append(lines, ev)
	}
	return lines, after, more, ended
}

func (f jobFeed) Detached() <-chan struct{} { return f.j.detach }
func (f jobFeed) Outcome() any              { return f.j.Outcome() }

// isQwen says whether a command runs Qwen Code, whatever --agent says.
func isQwen(argv []string) bool {
	return len(argv) > 0 && strings.TrimSuffix(filepath.Base(argv[0]), ".js") == "qwen"
}
