package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/headless"
)

// runExec runs an agent headless as a daemon job (it appears in corral
// ls, on the boards and in the event stream) and relays its stream.
func runExec(ctx context.Context, std IO, args []string) error {
	fs := newFlags("exec", std)
	name := fs.String("name", "", "a name to use instead of the id")
	agent := fs.String("agent", "", "how to talk to it: claude, codex or gemini (their streams), or acp (the Agent Client Protocol); default from the command's name")
	mode := fs.String("mode", "pipe", "pipe, or pty-lite: a PTY on stdout for programs that block-buffer a pipe (no permission relay)")
	timeout := fs.Duration("timeout", 0, "kill the run after this long (exit 124)")
	stall := fs.Duration("stall", 0, "say so when the run prints nothing for this long")
	policyFile := fs.String("policy", "", "a TOML policy that answers permission requests (deny when nothing matches)")
	prompt := fs.String("prompt", "", "the prompt, when it is not after -p in the command")
	asJSON := fs.Bool("json", false, "print events as NDJSON, then the outcome")
	var env envList
	fs.Var(&env, "env", "K=V to add to the agent's environment (repeatable)")
	var command []string
	for i, a := range args {
		if a == "--" {
			command, args = args[i+1:], args[:i]
			break
		}
	}
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if len(command) == 0 {
		return usagef("say what to run after --: corral exec -- claude -p \"…\" --output-format stream-json --verbose")
	}
	if *mode != "pipe" && *mode != "pty-lite" {
		return usagef("--mode %q: use pipe or pty-lite", *mode)
	}
	if *agent == "" {
		*agent = strings.TrimSuffix(filepath.Base(command[0]), ".js")
	}
	switch *agent {
	case "claude", "codex", "gemini":
	case "acp":
		if *prompt == "" {
			return usagef("an ACP agent (--agent acp) takes its prompt from --prompt")
		}
		if *mode == "pty-lite" {
			return usagef("an ACP agent talks over stdin and stdout: use --mode pipe")
		}
	default:
		return usagef("--agent %q: use claude, codex, gemini or acp", *agent)
	}
	req := api.ExecRequest{Name: *name, Agent: *agent, Command: command, TimeoutMS: timeout.Milliseconds(),
		StallMS: stall.Milliseconds(), Prompt: *prompt, Env: env, Mode: *mode}
	if *policyFile != "" {
		data, err := os.ReadFile(*policyFile)
		if err != nil {
			return fmt.Errorf("policy: %w", err)
		}
		if _, err := headless.ParsePolicy(*policyFile, data); err != nil {
			return err
		}
		req.Policy, req.PolicySource = string(data), *policyFile
	}
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	req.Cwd = dir
	c, err := connect(ctx)
	if err != nil {
		return err
	}
	var p api.Pane
	if err := c.Do(ctx, "POST", "/v1/jobs", req, &p); err != nil {
		return apiError(err)
	}
	// corral's own exit ends the job.
	stop := context.AfterFunc(ctx, func() {
		_ = c.Do(context.Background(), "POST", panePath(p.ID, "kill"), api.KillRequest{Signal: "TERM"}, nil)
	})
	defer stop()
	if !*asJSON {
		fmt.Fprintf(std.Stderr, "corral exec: job %s (answer its permission requests with corral answer %s yes|no)\n", p.ID, p.ID)
	}
	body, err := c.Stream(ctx, "/v1/jobs/"+url.PathEscape(p.ID)+"/stream")
	if err != nil {
		return apiError(err)
	}
	defer body.Close()
	var outcome *headless.Outcome
	lines := headless.NewLines(body)
	for {
		line, _, err := lines.Next()
		if err != nil {
			break
		}
		var probe struct {
			Type    string            `json:"type"`
			Outcome *headless.Outcome `json:"outcome"`
		}
		_ = json.Unmarshal(line, &probe)
		if probe.Type == "outcome" {
			outcome = probe.Outcome
		}
		if *asJSON {
			fmt.Fprintln(std.Stdout, string(line))
			continue
		}
		if outcome == nil {
			var ev headless.Event
			if json.Unmarshal(line, &ev) == nil {
				fmt.Fprintln(std.Stdout, ev.String())
			}
		}
	}
	if outcome == nil {
		if ctx.Err() != nil {
			return &exitError{code: 130, err: fmt.Errorf("interrupted; job %s was killed", p.ID)}
		}
		return fmt.Errorf("the job's stream ended without its outcome; see corral ls")
	}
	if outcome.State != "done" && !*asJSON {
		fmt.Fprintf(std.Stderr, "corral exec: %s\n", outcome.Reason)
	}
	if outcome.ExitCode != 0 {
		return &exitError{code: outcome.ExitCode, err: fmt.Errorf("")}
	}
	return nil
}
