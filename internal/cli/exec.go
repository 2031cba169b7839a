package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/agentdef"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/fleet"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

// runExec runs an agent headless as a daemon job (it appears in corral
// ls, on the boards and in the event stream) and relays its stream.
func runExec(fs *pflag.FlagSet) runFunc {
	name := fs.String("name", "", "a name to use instead of the id")
	agent := fs.String("agent", "", "how to read it: "+agentdef.Join(agentdef.BuiltIn().ExecNames(), "or")+" (their streams), auto (the stream says), or acp (the Agent Client Protocol); default from the command's name, else auto")
	mode := fs.String("mode", "pipe", "pipe, or pty-lite: a PTY on stdout for programs that block-buffer a pipe (no permission relay)")
	timeout := fs.Duration("timeout", 0, "kill the run after this long (exit 124)")
	stall := fs.Duration("stall", 0, "say so when the run prints nothing for this long")
	policyFile := fs.String("policy", "", "a TOML policy `FILE` that answers permission requests (deny when nothing matches)")
	prompt := fs.String("prompt", "", "the prompt, when it is not after -p in the command")
	asJSON := fs.Bool("json", false, "print events as NDJSON, then the outcome")
	onFleet := fs.Bool("fleet", false, "queue the job for the fleet: a host with capacity runs it")
	host := fs.String("host", "", "with --fleet: this host runs it")
	retry := fs.Int("retry", 0, "with --fleet: queue it again this many times if its host dies mid-job")
	hosts := fs.String("hosts", "", "with --fleet: one job on each reachable host matching these globs (comma-separated, like 'web-*')")
	allHosts := fs.Bool("all-hosts", false, "with --fleet: one job on each reachable host that takes jobs")
	var env envList
	fs.Var(&env, "env", "`K=V` to add to the agent's environment (repeatable)")
	return func(ctx context.Context, std IO, args []string) error {
		// Everything after "--" is the command, flags included.
		var command []string
		for i, a := range args {
			if a == "--" {
				command = args[i+1:]
				break
			}
		}
		if len(command) == 0 {
			return usagef("say what to run after --: corral exec -- claude -p \"…\" --output-format stream-json --verbose")
		}
		if *mode != "pipe" && *mode != "pty-lite" {
			return usagef("--mode %q: use pipe or pty-lite", *mode)
		}
		if *agent == "" {
			*agent = strings.TrimSuffix(filepath.Base(command[0]), ".js")
			if headless.FormatOf(*agent) == "" {
				*agent = "auto"
			}
		}
		_, known := agentdef.BuiltIn().ByExec(*agent)
		switch {
		case known || *agent == "auto":
		case *agent == "acp":
			if *prompt == "" {
				return usagef("an ACP agent (--agent acp) takes its prompt from --prompt")
			}
			if *mode == "pty-lite" {
				return usagef("an ACP agent talks over stdin and stdout: use --mode pipe")
			}
		default:
			return usagef("--agent %q: use %s, auto or acp", *agent, strings.Join(agentdef.BuiltIn().ExecNames(), ", "))
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
		// The job runs as the command would here: in this folder, with this
		// environment (not the daemon's), --env added.
		req.Cwd, req.CallerEnv = dir, os.Environ()
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		// Signals are watched before the job exists, so none falls between.
		// SIGPIPE: the reader of corral exec's output went away (| head).
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
		defer signal.Stop(sigs)
		if *onFleet {
			var fj fleet.ExecStarted
			fr := fleet.ExecRequest{Exec: req, Host: *host, Retry: *retry, AllHosts: *allHosts}
			if *hosts != "" {
				fr.Hosts = strings.Split(*hosts, ",")
			}
			if err := c.Do(ctx, "POST", "/v1/fleet/jobs", fr, &fj); err != nil {
				return apiError(err)
			}
			if !*asJSON && len(fj.Hosts) > 0 {
				fmt.Fprintf(std.Stderr, "corral exec: fleet run %s: a job on each of %s\n", fj.ID, strings.Join(fj.Hosts, ", "))
			} else if !*asJSON {
				fmt.Fprintf(std.Stderr, "corral exec: fleet job %s queued\n", fj.ID)
			}
			return followJob(ctx, std, c, fj.ID, sigs, *asJSON, req.Agent == "auto")
		}
		if *host != "" || *retry != 0 || *hosts != "" || *allHosts {
			return usagef("--host, --hosts, --all-hosts and --retry go with --fleet")
		}
		var p api.Pane
		if err := c.Do(ctx, "POST", "/v1/jobs", req, &p); err != nil {
			return apiError(err)
		}
		if !*asJSON {
			// Only a relayed agent without a policy asks the person anything.
			relayed := req.Policy == "" && req.Mode != "pty-lite" && !req.NoRelay &&
				(req.Agent == "claude" || req.Agent == "qwen" || req.Agent == "acp")
			if relayed {
				fmt.Fprintf(std.Stderr, "corral exec: job %s (answer its permission requests with corral answer %s yes|no)\n", p.ID, p.ID)
			} else {
				fmt.Fprintf(std.Stderr, "corral exec: job %s\n", p.ID)
			}
		}
		return followJob(ctx, std, c, p.ID, sigs, *asJSON, req.Agent == "auto")
	}
}

// ExecEndWait bounds how long corral exec, interrupted, waits for the
// daemon to confirm the job ended.
const ExecEndWait = 10 * time.Second

// followJob relays a job's stream until its outcome and returns the exit
// status it calls for. An interrupt (a signal, or ctx ending) kills the
// job and waits for the daemon to confirm its end before returning
// 128+signal; a second signal stops the wait.
func followJob(ctx context.Context, std IO, c *client.Client, id string, sigs <-chan os.Signal, asJSON, auto bool) error {
	// The stream outlives ctx: after an interrupt it carries the outcome
	// that confirms the job ended.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	body, err := c.Stream(sctx, jobPath(id, "stream"))
	if err != nil {
		return apiError(err)
	}
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		seen := 0 // events received: where a stream taken again goes on
		for {
			ended := false
			r := headless.NewLines(body)
			for {
				line, _, err := r.Next()
				if err != nil {
					break
				}
				var probe struct{ Type, Line string }
				_ = json.Unmarshal(line, &probe)
				switch {
				case probe.Type == "outcome":
					ended = true
				case probe.Type != string(headless.EventDiagnostic) || !strings.HasPrefix(probe.Line, api.FellBehind):
					seen++
				}
				select {
				case lines <- append([]byte(nil), line...):
				case <-sctx.Done():
					body.Close()
					return
				}
			}
			body.Close()
			if ended || isFleetJob(id) {
				return
			}
			// The daemon went (killed, restarted) before the outcome: a
			// held job goes on, and the next daemon has its events.
			if body = reopenStream(sctx, id, seen); body == nil {
				return
			}
		}
	}()
	view := &readable{w: std.Stdout, plain: auto}
	lastHost := ""
	var (
		outcome     *headless.Outcome
		interrupted os.Signal
		forced      bool
		gone        bool // the reader of stdout went away
		ctxDone     = ctx.Done()
		giveUp      <-chan time.Time
		killed      = make(chan error, 1)
	)
	interrupt := func(sig os.Signal) {
		if interrupted != nil {
			return
		}
		interrupted = sig
		giveUp = time.After(ExecEndWait)
		go func() {
			killed <- c.Do(sctx, "POST", jobPath(id, "kill"), api.KillRequest{Signal: "TERM"}, nil)
		}()
	}
read:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				break read
			}
			var probe struct {
				Type    string            `json:"type"`
				Outcome *headless.Outcome `json:"outcome"`
			}
			_ = json.Unmarshal(line, &probe)
			if probe.Type == "outcome" {
				outcome = probe.Outcome
			}
			var fleetNote struct {
				Text string `json:"text"`
			}
			switch {
			case gone:
			case asJSON:
				fmt.Fprintln(std.Stdout, string(line))
			case probe.Type == fleet.HostOutcomeType:
				// Said by the fleet's note that follows it.
			case probe.Type == fleet.FleetLineType && json.Unmarshal(line, &fleetNote) == nil:
				view.end()
				fmt.Fprintf(std.Stderr, "corral exec: %s\n", fleetNote.Text)
			case outcome == nil:
				var ev headless.Event
				if json.Unmarshal(line, &ev) == nil {
					// A run on several hosts: each host's lines under its name.
					var from struct {
						Host string `json:"host"`
					}
					if _ = json.Unmarshal(line, &from); from.Host != "" && from.Host != lastHost && ev.Readable() {
						view.end()
						fmt.Fprintf(std.Stdout, "[%s]\n", from.Host)
						lastHost = from.Host
					}
					view.show(ev)
				}
			default:
				view.end()
			}
		case sig := <-sigs:
			if sig == syscall.SIGPIPE && !outputGone(std.Stdout) {
				// A write to a socket whose other end went (the daemon
				// restarting under a stream) raises it too, once SIGPIPE
				// is watched: only a reader gone is an interrupt.
				continue
			}
			if sig == syscall.SIGPIPE {
				gone = true // every later write would raise it again
			}
			if interrupted != nil {
				if sig == syscall.SIGPIPE {
					continue
				}
				forced = true // a second signal: stop waiting
				break read
			}
			interrupt(sig)
		case <-ctxDone:
			ctxDone = nil
			if interrupted != nil {
				continue // its signal came first, and is being dealt with
			}
			// The signal that ended ctx, if one did, reaches sigs too, but
			// not always first: wait a moment for it to say which it was.
			select {
			case sig := <-sigs:
				interrupt(sig)
			case <-time.After(200 * time.Millisecond):
				interrupt(os.Interrupt)
			}
		case err := <-killed:
			if err != nil {
				fmt.Fprintf(std.Stderr, "corral exec: kill job %s: %v\n", id, apiError(err))
			}
		case <-giveUp:
			break read
		}
	}
	view.end()
	if interrupted != nil {
		code := 130
		if s, ok := interrupted.(syscall.Signal); ok {
			code = 128 + int(s)
		}
		if outcome == nil && (forced || !jobEnded(c, id)) {
			return &exitError{code: code, err: fmt.Errorf("interrupted (%v); job %s did not confirm its end (waited up to %v): see corral ls, and corral kill %s --signal KILL", interrupted, id, ExecEndWait, id)}
		}
		return &exitError{code: code, err: fmt.Errorf("interrupted (%v); job %s was killed", interrupted, id)}
	}
	if outcome == nil {
		return fmt.Errorf("the job's stream ended without its outcome; see corral ls")
	}
	if outcome.State != "done" && !asJSON {
		fmt.Fprintf(std.Stderr, "corral exec: %s\n", outcome.Reason)
		if tail := stderrTail(outcome.Stderr, 12); tail != "" {
			fmt.Fprintf(std.Stderr, "corral exec: the agent's stderr ends:\n%s\n", tail)
		}
	}
	code := outcome.ExitCode
	if outcome.State != "done" && code == 0 {
		code = headless.ExitFailed
	}
	if code != 0 {
		return &exitError{code: code, err: fmt.Errorf("")}
	}
	return nil
}

// ExecReconnectWait bounds how long corral exec tries to take a job's
// stream again after its daemon went away mid-job.
const ExecReconnectWait = 30 * time.Second

// reopenStream takes a job's stream again from event number from, on the
// daemon that runs now (starting one if none does); nil when the job is
// gone or no daemon answers within ExecReconnectWait.
func reopenStream(ctx context.Context, id string, from int) io.ReadCloser {
	deadline := time.Now().Add(ExecReconnectWait)
	for time.Now().Before(deadline) {
		c, err := connect(ctx)
		if err == nil {
			body, err := c.Stream(ctx, jobPath(id, "stream")+"?from="+strconv.Itoa(from))
			if err == nil {
				return body
			}
			var ce *client.Error
			if errors.As(err, &ce) && ce.Status == http.StatusNotFound {
				return nil // the next daemon does not have it: it ended with the last
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// isFleetJob tells a fleet job's id (fj + 16 characters) from a local
// job's (5 characters).
func isFleetJob(id string) bool { return len(id) > 5 && strings.HasPrefix(id, "fj") }

// jobPath is the API path of a job's stream or kill.
func jobPath(id, action string) string {
	if isFleetJob(id) {
		return "/v1/fleet/jobs/" + url.PathEscape(id) + "/" + action
	}
	if action == "kill" {
		return panePath(id, "kill")
	}
	return "/v1/jobs/" + url.PathEscape(id) + "/" + action
}

// jobEnded asks the daemon whether the job has ended.
func jobEnded(c *client.Client, id string) bool {
	if isFleetJob(id) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var p api.Pane
	return c.Do(ctx, "GET", panePath(id, ""), nil, &p) == nil && p.ExitCode != nil
}

// readable prints a job's events for people: one line each, the pieces
// of a streamed text joined on one line, and nothing for events corral
// has no use for (they stay in --json).
type readable struct {
	w       io.Writer
	inDelta bool
	// plain: no agent was named, and the output held only lines of text so
	// far (a plain program): they are printed as they came.
	plain bool
}

func (r *readable) show(ev headless.Event) {
	if ev.Type != headless.EventDiagnostic && ev.Type != headless.EventStall {
		r.plain = false
	}
	if r.plain && ev.Type == headless.EventDiagnostic {
		fmt.Fprintln(r.w, ev.Line)
		return
	}
	if !ev.Readable() {
		return
	}
	if ev.Type == headless.EventText && ev.Delta {
		if ev.Text == "" {
			return
		}
		if !r.inDelta {
			fmt.Fprint(r.w, "assistant: ")
			r.inDelta = true
		}
		fmt.Fprint(r.w, ev.Text)
		return
	}
	r.end()
	fmt.Fprintln(r.w, ev.Summary())
}

// end closes a streamed text's line.
func (r *readable) end() {
	if r.inDelta {
		fmt.Fprintln(r.w)
		r.inDelta = false
	}
}

// stderrTail is the last n non-empty lines of an agent's stderr, without
// stack frames (a JavaScript trace says little to whoever runs the job).
func stderrTail(stderr string, n int) string {
	var keep []string
	for _, l := range strings.Split(stderr, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "at ") {
			continue
		}
		keep = append(keep, "  "+strings.TrimRight(l, "\r"))
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	return strings.Join(keep, "\n")
}

// outputGone says whether w is a pipe or socket whose reader has gone (a
// write would fail with EPIPE): POLLERR or POLLHUP on it, at once.
func outputGone(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLOUT}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
}
