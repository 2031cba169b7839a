package jobs

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/agentdef"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/corral-dev/corral/internal/rules"
)

// FromRequest is the run a request to start a job asks for, and what its
// row keeps; an error says what is wrong with the request. set is the
// rules in force (a pty-lite run watches for its agent's prompts).
func FromRequest(req api.ExecRequest, set *rules.Set) (headless.Options, Keep, error) {
	execAgent, known := agentdef.BuiltIn().ByExec(req.Agent)
	switch {
	case known || req.Agent == "auto":
	case req.Agent == "acp":
		if req.Prompt == "" {
			return headless.Options{}, Keep{}, errors.New("an ACP agent takes its prompt from --prompt")
		}
	default:
		return headless.Options{}, Keep{}, fmt.Errorf("agent %q: use %s, auto or acp", req.Agent, strings.Join(agentdef.BuiltIn().ExecNames(), ", "))
	}
	o := headless.Options{Agent: req.Agent, Argv: req.Command, Dir: req.Cwd, Env: req.Env, BaseEnv: req.CallerEnv,
		Timeout: time.Duration(req.TimeoutMS) * time.Millisecond, Stall: time.Duration(req.StallMS) * time.Millisecond}
	if req.Policy != "" {
		p, err := headless.ParsePolicy(req.PolicySource, []byte(req.Policy))
		if err != nil {
			return headless.Options{}, Keep{}, err
		}
		o.Policy = p
	}
	switch req.Mode {
	case "", "pipe":
	case "pty-lite":
		o.Mode = "pty-lite"
		if execAgent != nil && set != nil {
			o.PromptRules, _ = set.ByName(execAgent.Name)
		}
		req.NoRelay = true // no stdin in pty-lite mode
	default:
		return headless.Options{}, Keep{}, fmt.Errorf("mode %q: use pipe or pty-lite", req.Mode)
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
	return o, Keep{Policy: req.Policy, PolicySource: req.PolicySource, Fleet: req.Fleet}, nil
}

// isQwen says whether a command runs Qwen Code, whatever --agent says.
func isQwen(argv []string) bool {
	return len(argv) > 0 && strings.TrimSuffix(filepath.Base(argv[0]), ".js") == "qwen"
}

// Feed is a job's stream (httpapi.JobFeed): its events, a line first for
// those it missed, and its outcome.
type Feed struct{ j *Job }

// Feed follows the job for its stream.
func (j *Job) Feed() Feed { return Feed{j} }

func (f Feed) Since(next int) ([]any, int, <-chan struct{}, bool) {
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

func (f Feed) Detached() <-chan struct{} { return f.j.detach }
func (f Feed) Outcome() any              { return f.j.Outcome() }
