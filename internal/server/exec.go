package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/agentdef"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/corral-dev/corral/internal/httpapi"
)

// handleExec starts a headless job.
func (s *Server) handleExec(w http.ResponseWriter, r *http.Request) {
	var req api.ExecRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	if len(req.Command) == 0 {
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", errors.New("no command; say what to run after --"))
		return
	}
	if err := checkRunFields(api.RunRequest{Name: req.Name, Command: req.Command, Cwd: req.Cwd, Env: req.Env}); err != nil {
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", err)
		return
	}
	if err := checkRunFields(api.RunRequest{Env: req.CallerEnv}); err != nil {
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("caller environment: %w", err))
		return
	}
	execAgent, known := agentdef.BuiltIn().ByExec(req.Agent)
	switch {
	case known || req.Agent == "auto":
	case req.Agent == "acp":
		if req.Prompt == "" {
			httpapi.Fail(w, http.StatusBadRequest, "bad_request", errors.New("an ACP agent takes its prompt from --prompt"))
			return
		}
	default:
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("agent %q: use %s, auto or acp", req.Agent, strings.Join(agentdef.BuiltIn().ExecNames(), ", ")))
		return
	}
	o := headless.Options{Agent: req.Agent, Argv: req.Command, Dir: req.Cwd, Env: req.Env, BaseEnv: req.CallerEnv,
		Timeout: time.Duration(req.TimeoutMS) * time.Millisecond, Stall: time.Duration(req.StallMS) * time.Millisecond}
	if req.Policy != "" {
		p, err := headless.ParsePolicy(req.PolicySource, []byte(req.Policy))
		if err != nil {
			httpapi.Fail(w, http.StatusBadRequest, "bad_request", err)
			return
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
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("mode %q: use pipe or pty-lite", req.Mode))
		return
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
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", err)
		return
	}
	httpapi.Reply(w, j.json())
}

// handleJobStream streams a job's events from its start, then its outcome.
func (s *Server) handleJobStream(w http.ResponseWriter, r *http.Request) {
	f, ok := s.lookupHTTP(w, r)
	if !ok {
		return
	}
	j := f.job
	if j == nil {
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", errors.New("not a headless job; corral events shows a pane's changes"))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	rc := http.NewResponseController(w)
	// Each write has a deadline: a reader that stopped reading is dropped,
	// never waited for.
	send := func(v any) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteWait))
		return enc.Encode(v) == nil && rc.Flush() == nil
	}
	_ = rc.Flush() // the headers, at once: the client waits for them with a deadline
	// from: the number of the first event wanted (a client that lost its
	// stream, to a restarted daemon, asks for what it missed).
	next, _ := strconv.Atoi(r.URL.Query().Get("from"))
	next = max(next, 0)
	for {
		evs, after, missed, more, ended := j.Since(next)
		if missed > 0 {
			line := fmt.Sprintf("%s %d events behind the job and missed them", api.FellBehind, missed)
			if !send(headless.Event{Type: headless.EventDiagnostic, Line: line}) {
				return
			}
		}
		for _, ev := range evs {
			if !send(ev) {
				return
			}
		}
		next = after
		if ended {
			break
		}
		select {
		case <-more:
		case <-j.detach: // let go for the next daemon: the client takes the stream from it
			return
		case <-r.Context().Done():
			return
		}
	}
	send(map[string]any{"type": "outcome", "outcome": j.Outcome()})
}

// streamWriteWait bounds one write of a stream to its reader.
const streamWriteWait = 10 * time.Second

// isQwen says whether a command runs Qwen Code, whatever --agent says.
func isQwen(argv []string) bool {
	return len(argv) > 0 && strings.TrimSuffix(filepath.Base(argv[0]), ".js") == "qwen"
}
