package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/config"

	"github.com/spf13/pflag"
)

func clientNoStart() *client.Client { return client.New(config.SocketPath()) }

// panePath is the API path of a pane (by id or name), or of one of its actions.
func panePath(ref, action string) string {
	p := "/v1/panes/" + url.PathEscape(ref)
	if action != "" {
		p += "/" + action
	}
	return p
}

// localRefs replaces each HOST:ID ref that names one of this daemon's own
// panes (a tmux pane is named SESSION:WINDOW.PANE) by the pane's id;
// the others are left as they are.
func localRefs(ctx context.Context, c *client.Client, refs []string) []string {
	out := append([]string(nil), refs...)
	for i, ref := range out {
		if !strings.Contains(ref, ":") {
			continue
		}
		var p api.Pane
		// The colon escaped: asked of this daemon, never routed to a host.
		path := "/v1/panes/" + strings.ReplaceAll(url.PathEscape(ref), ":", "%3A")
		if err := c.Do(ctx, "GET", path, nil, &p); err == nil && p.ID != "" {
			out[i] = p.ID
		}
	}
	return out
}

// paneAction posts body to a pane's action and prints the answer as JSON
// with asJSON.
func paneAction(ctx context.Context, std IO, ref, action string, body, out any, asJSON bool) error {
	c, err := connect(ctx)
	if err != nil {
		return err
	}
	if err := c.Do(ctx, "POST", panePath(ref, action), body, out); err != nil {
		return apiError(err)
	}
	if asJSON {
		return printJSON(std, out)
	}
	return nil
}

func afterMillis(n int) <-chan time.Time { return time.After(time.Duration(n) * time.Millisecond) }

// lsRow is what corral ls prints of a pane.
type lsRow = api.PaneRow

// printRawJSON prints JSON as printJSON would print its value decoded.
func printRawJSON(std IO, raw json.RawMessage) error {
	var b bytes.Buffer
	b.Grow(len(raw) + len(raw)/2)
	// The daemon's encoder ends with a newline, which Indent would keep:
	// printJSON ends with exactly one.
	raw = bytes.TrimRight(raw, " \t\r\n")
	if indentCompact(&b, raw) != nil {
		// Not compact, or broken: json.Indent says which.
		b.Reset()
		if err := json.Indent(&b, raw, "", "  "); err != nil {
			return fmt.Errorf("the daemon's answer is not JSON: %w", err)
		}
	}
	b.WriteByte('\n')
	_, err := std.Stdout.Write(b.Bytes())
	return err
}

func printJSON(std IO, v any) error {
	enc := json.NewEncoder(std.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// envList collects repeated --env K=V flags.
type envList []string

func (e *envList) String() string { return strings.Join(*e, ",") }
func (e *envList) Type() string   { return "stringArray" }
func (e *envList) Set(v string) error {
	if !strings.Contains(v, "=") || strings.HasPrefix(v, "=") {
		return fmt.Errorf("%q is not K=V", v)
	}
	*e = append(*e, v)
	return nil
}

func runRun(fs *pflag.FlagSet) runFunc {
	name := fs.String("name", "", "a name to use instead of the id")
	cwd := fs.String("cwd", "", "the `DIR` to run in (default: the current one)")
	size := fs.String("size", "120x32", "terminal size `COLSxROWS`")
	agent := fs.String("agent", "", "use this agent's rules instead of recognising it")
	asJSON := fs.Bool("json", false, "print the pane as JSON")
	attach := fs.Bool("attach", false, "attach to the new pane at once")
	remove := fs.Bool("rm", false, "remove the pane when its program exits")
	policyFile := fs.String("policy", "", "decide the agent's permission requests by this policy file (as corral exec's)")
	noPolicy := fs.Bool("no-policy", false, "leave config.toml's default policy out")
	var wt worktreeFlag
	fs.Var(&wt, "worktree", "run in a new git worktree, on branch BRANCH (--worktree=BRANCH or --worktree BRANCH; default corral/NAME)")
	fs.Lookup("worktree").NoOptDefVal = "true"
	var env envList
	fs.Var(&env, "env", "`K=V` to add to the program's environment (repeatable)")
	return func(ctx context.Context, std IO, args []string) error {
		// Everything after "--" is the command, flags included.
		var command []string
		pos := args
		for i, a := range args {
			if a == "--" {
				command = args[i+1:]
				pos = args[:i]
				break
			}
		}
		if wt.on && wt.branch == "" && command != nil && len(pos) == 1 {
			wt.branch, pos = pos[0], nil // --worktree BRANCH
		}
		if command == nil {
			command = pos
		} else if len(pos) > 0 {
			return usagef("put the command after --: corral run [flags] -- %s", strings.Join(pos, " "))
		}
		if len(command) == 0 {
			return usagef("say what to run: corral run -- COMMAND ARGS…")
		}
		cols, rows, err := parseSize(*size)
		if err != nil {
			return err
		}
		// The command is found and run as it would be here: from this
		// folder (a relative --cwd is relative to it) and this PATH.
		here, err := os.Getwd()
		if err != nil {
			return err
		}
		dir := *cwd
		if dir == "" {
			dir = here
		} else if !filepath.IsAbs(dir) {
			dir = filepath.Join(here, dir)
		}
		if !hasVar(env, "PATH") {
			env = append(envList{"PATH=" + os.Getenv("PATH")}, env...)
		}
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		req := api.RunRequest{Name: *name, Command: command, Cwd: dir, Cols: cols, Rows: rows, Agent: *agent, Env: env, Remove: *remove,
			NoPolicy: *noPolicy, Worktree: wt.on, Branch: wt.branch}
		if *policyFile != "" {
			if req.Policy, req.PolicySource, err = readPolicy(*policyFile); err != nil {
				return err
			}
		}
		var p api.Pane
		if err := c.Do(ctx, "POST", "/v1/panes", req, &p); err != nil {
			return apiError(err)
		}
		if *asJSON {
			if err := printJSON(std, p); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(std.Stdout, p.ID)
		}
		if *attach {
			return runAttach(pflag.NewFlagSet("attach", pflag.ContinueOnError))(ctx, std, []string{p.ID})
		}
		return nil
	}
}

// hasVar says whether env (K=V entries) sets key.
func hasVar(env []string, key string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			return true
		}
	}
	return false
}

// runRm removes ended panes and jobs; --force ends running ones first.
func runRm(fs *pflag.FlagSet) runFunc {
	force := fs.Bool("force", false, "end running panes first (SIGHUP, then SIGKILL)")
	asJSON := fs.Bool("json", false, "print the removed panes as JSON")
	withWorktree := fs.Bool("worktree", false, "also remove the git worktree corral made for the pane (refused while it has uncommitted changes; its branch stays)")
	return func(ctx context.Context, std IO, pos []string) error {
		if len(pos) == 0 {
			return usagef("need one or more pane ids or names")
		}
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		q := url.Values{}
		if *force {
			q.Set("force", "1")
		}
		if *withWorktree {
			q.Set("worktree", "1")
		}
		path := ""
		if len(q) > 0 {
			path = "?" + q.Encode()
		}
		removed := []api.Pane{}
		var failed error
		for _, ref := range pos {
			var p api.Pane
			if err := c.Do(ctx, "DELETE", panePath(ref, "")+path, nil, &p); err != nil {
				err = apiError(err)
				fmt.Fprintf(std.Stderr, "corral rm: %s: %v\n", ref, err)
				failed = &exitError{code: 1, err: errors.New("")}
				continue
			}
			removed = append(removed, p)
		}
		if *asJSON {
			if err := printJSON(std, removed); err != nil {
				return err
			}
		}
		return failed
	}
}

func runLs(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the panes as a JSON array")
	all := fs.Bool("fleet", false, "the panes of every host in the fleet, each with its host")
	hosts := fs.String("host", "", "with --fleet: only these hosts' panes (comma-separated; globs like web-*)")
	states := fs.String("state", "", "with --fleet: only the panes in these states (comma-separated)")
	return func(ctx context.Context, std IO, _ []string) error {
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		if *all {
			return lsFleet(ctx, std, c, *asJSON, *hosts, *states)
		}
		if *hosts != "" || *states != "" {
			return usagef("--host and --state go with --fleet")
		}
		if *asJSON {
			// The daemon's own JSON, indented: decoding a thousand panes
			// whole to encode them again cost more than the daemon's answer.
			// Indent checks it is JSON: no decode scans it first.
			raw, err := c.Raw(ctx, "GET", "/v1/panes")
			if err != nil {
				return apiError(err)
			}
			return printRawJSON(std, raw)
		}
		// Only the columns printed are asked for (a daemon of an earlier
		// build answers whole panes: the same columns are decoded).
		var panes []lsRow
		if err := c.Do(ctx, "GET", "/v1/panes?view=ls", nil, &panes); err != nil {
			return apiError(err)
		}
		return printLs(std.Stdout, panes)
	}
}

// printLs prints ls's table, then the panes without hooks, through a
// buffer: tabwriter writes each cell and each padding on its own, which
// were 14,000 writes to the pipe for a thousand panes.
func printLs(w io.Writer, panes []lsRow) error {
	out := bufio.NewWriterSize(w, 64<<10)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tAGENT\tSTATE\tFOR\tSOURCE\tMESSAGE")
	for _, p := range panes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, dash(p.Name), p.Agent, paneState(api.Pane{State: p.State, Kind: p.Kind, ExitCode: p.ExitCode}), age(p.Since), p.Source, p.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// An agent without its hooks is told from its screen alone: say so, and why.
	for _, p := range panes {
		if p.IntegrationError != "" && p.State != "exited" {
			fmt.Fprintf(out, "%s: no hooks: %s\n", p.ID, p.IntegrationError)
		}
	}
	return out.Flush()
}

func age(since string) string {
	t, err := time.Parse(time.RFC3339Nano, since)
	if err != nil {
		return "?"
	}
	return time.Since(t).Round(time.Second).String()
}

func runScreen(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the screen as JSON")
	ansi := fs.Bool("ansi", false, "keep colours and attributes")
	return func(ctx context.Context, std IO, pos []string) error {
		if len(pos) != 1 {
			return usagef("need one pane id or name")
		}
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		path := panePath(pos[0], "screen")
		if *ansi {
			path += "?ansi=1"
		}
		var s api.Screen
		if err := c.Do(ctx, "GET", path, nil, &s); err != nil {
			return apiError(err)
		}
		switch {
		case *asJSON:
			return printJSON(std, s)
		case *ansi:
			fmt.Fprint(std.Stdout, s.ANSI+"\x1b[0m\r\n")
		default:
			fmt.Fprintln(std.Stdout, strings.Join(s.Lines, "\n"))
		}
		return nil
	}
}

func runSend(fs *pflag.FlagSet) runFunc {
	enter := fs.Bool("enter", false, "press Enter after the text")
	force := fs.Bool("force", false, "type even while the pane is blocked on a prompt")
	asJSON := fs.Bool("json", false, "print the pane as JSON")
	timeout := fs.Duration("timeout", api.DefaultReadyWait, "how long to wait for an agent that is still starting to be ready for input")
	return func(ctx context.Context, std IO, pos []string) error {
		if len(pos) != 2 {
			return usagef("need a pane and the text: corral send ID TEXT [--enter]")
		}
		if *timeout <= 0 || *timeout > time.Hour {
			return usagef("--timeout %v: give a duration above 0 and at most 1h", *timeout)
		}
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		c.Timeout += *timeout // the daemon answers once the agent is ready
		var p api.Pane
		req := api.SendRequest{Text: pos[1], Enter: *enter, Force: *force, ReadyMS: timeout.Milliseconds()}
		if err := c.Do(ctx, "POST", panePath(pos[0], "send"), req, &p); err != nil {
			return apiError(err)
		}
		if *asJSON {
			return printJSON(std, &p)
		}
		return nil
	}
}

func runAnswer(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print what was typed as JSON (without a CHOICE: what the prompt takes)")
	return func(ctx context.Context, std IO, pos []string) error {
		if len(pos) == 1 {
			return printPrompt(ctx, std, pos[0], *asJSON)
		}
		if len(pos) != 2 {
			return usagef("need a pane and a choice: yes, always, no, cancel, an option number or one of the prompt's own (corral answer ID lists them)")
		}
		return paneAction(ctx, std, pos[0], "answer", api.AnswerRequest{Choice: pos[1]}, &api.AnswerResult{}, *asJSON)
	}
}

// printPrompt prints what a pane's prompt takes now: one answer a line,
// its own choices with what they do (with --json, the pane's prompt).
// A pane that is not blocked, or whose prompt no rule knows, is refused
// as an answer to it would be (exit 3).
func printPrompt(ctx context.Context, std IO, ref string, asJSON bool) error {
	c, err := connect(ctx)
	if err != nil {
		return err
	}
	var p api.Pane
	if err := c.Do(ctx, "GET", panePath(ref, ""), nil, &p); err != nil {
		return apiError(err)
	}
	switch {
	case p.State != "blocked":
		return &exitError{code: exitRefused, err: fmt.Errorf("%s is not blocked (it is %s); nothing to answer", ref, p.State)}
	case p.Prompt == nil:
		return &exitError{code: exitRefused, err: fmt.Errorf("%s is blocked (%s), but its screen shows no prompt corral knows the keys of: "+
			"look at it with corral screen, then type its keys with corral send, or attach", ref, dash(p.Message))}
	}
	if asJSON {
		return printJSON(std, p.Prompt)
	}
	out := bufio.NewWriter(std.Stdout)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, a := range p.Prompt.Answers {
		fmt.Fprintln(tw, a)
	}
	if p.Prompt.Options {
		fmt.Fprintf(tw, "1, 2, …\tan option of its menu\n")
	}
	for _, ch := range p.Prompt.Choices {
		fmt.Fprintf(tw, "%s\t%s\n", ch.Name, ch.Label)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return out.Flush()
}

func runKill(fs *pflag.FlagSet) runFunc {
	sig := fs.String("signal", "", "send exactly this `SIGNAL` (TERM, KILL, HUP, INT, …) and nothing after it (default: TERM, then KILL after --grace)")
	grace := fs.Duration("grace", api.DefaultKillGrace, "without --signal: how long the program has to end after TERM before KILL (at most 7s)")
	asJSON := fs.Bool("json", false, "print the pane as JSON")
	return func(ctx context.Context, std IO, pos []string) error {
		if len(pos) != 1 {
			return usagef("need one pane id or name")
		}
		if *grace < 0 || *grace > api.MaxKillGrace {
			return usagef("--grace %v: give a duration from 0s to %v", *grace, api.MaxKillGrace)
		}
		// The daemon answers once the pane has exited, or 2 s after the last
		// signal.
		var p api.Pane
		req := api.KillRequest{Signal: *sig}
		if *sig == "" {
			req.Grace = grace.String()
		}
		if err := paneAction(ctx, std, pos[0], "kill", req, &p, *asJSON); err != nil {
			return err
		}
		if p.ExitCode == nil && (p.State == "working" || p.State == "blocked" || p.State == "idle") {
			sent := "SIGTERM and SIGKILL"
			if *sig != "" {
				sent = "SIG" + strings.TrimPrefix(strings.ToUpper(*sig), "SIG")
			}
			fmt.Fprintf(std.Stderr, "corral kill: %s is still running (%s) after %s; corral kill %s --signal KILL ends it\n",
				pos[0], p.State, sent, pos[0])
		}
		return nil
	}
}

// parseSince reads a duration ago ("1h") or a time (RFC 3339).
func parseSince(s string) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return time.Now().Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, usagef("--since %q must be a duration like 1h or a time like 2026-12-01T10:00:00Z", s)
}

func runEvents(fs *pflag.FlagSet) runFunc {
	since := fs.String("since", "", "logged events from this long ago (1h) or this `TIME` (RFC 3339)")
	follow := fs.Bool("follow", false, "keep printing new events")
	all := fs.Bool("fleet", false, "the events of every host in the fleet, each with its host")
	_ = fs.Bool("json", true, "events are always NDJSON")
	return func(ctx context.Context, std IO, pos []string) error {
		if *all || len(pos) > 0 {
			return fleetEvents(ctx, std, pos, *since, *follow)
		}
		q := url.Values{}
		if *since != "" {
			t, err := parseSince(*since)
			if err != nil {
				return err
			}
			q.Set("since", t.UTC().Format(time.RFC3339Nano))
		}
		if *follow {
			q.Set("follow", "1")
		}
		if !*follow && *since == "" {
			q.Set("since", time.Now().Add(-24*time.Hour).UTC().Format(time.RFC3339Nano))
		}
		return printStream(ctx, std, "/v1/events?"+q.Encode())
	}
}

// printStream copies an NDJSON stream of the daemon's to stdout, line by
// line as it arrives, until it ends or ctx does.
func printStream(ctx context.Context, std IO, path string) error {
	c, err := connect(ctx)
	if err != nil {
		return err
	}
	body, err := c.Stream(ctx, path)
	if err != nil {
		return apiError(err)
	}
	defer body.Close()
	_, err = copyLines(std, body)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
