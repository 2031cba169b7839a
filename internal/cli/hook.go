package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/config"
	"github.com/spf13/pflag"
)

// runHook forwards an agent hook's payload to the daemon. Agents run it
// from the hooks corral adds to their command line; it finds its pane and
// token in the environment corral gave the pane. A failing hook must never
// break the agent: it always exits 0, prints nothing on stdout (Claude Code
// reads a hook's stdout) but a policy's decision on a permission request,
// and gives up after a few seconds (then the agent asks its person).
func runHook(fs *pflag.FlagSet) runFunc {
	agent := fs.String("agent", "claude-code", "the agent whose payload this is: claude-code, codex or gemini")
	outside := fs.Bool("outside", false, "report only for an agent started outside corral (the hooks corral integrate --global installs; a corral pane's agent has its own)")
	return func(ctx context.Context, std IO, pos []string) error {
		var payload []byte
		if len(pos) > 0 {
			payload = []byte(pos[len(pos)-1]) // Codex passes the JSON as the last argument
		} else {
			payload, _ = io.ReadAll(io.LimitReader(std.Stdin, 1<<20))
		}
		if !json.Valid(payload) {
			fmt.Fprintln(std.Stderr, "corral hook: the payload is not JSON; ignored")
			return nil
		}
		logHook(os.Getenv("CORRAL_HOOK_LOG"), *agent, payload)
		if *outside && os.Getenv("CORRAL_PANE") != "" {
			return nil // the pane's own hooks report
		}
		req := api.HookRequest{Pane: os.Getenv("CORRAL_PANE"), Token: os.Getenv("CORRAL_TOKEN"), Agent: *agent, Payload: payload}
		if req.Pane == "" {
			// An agent started outside corral: in a tmux pane corral may
			// watch ($TMUX is "SOCKET,PID,SESSION").
			tmux, tmuxPane := os.Getenv("TMUX"), os.Getenv("TMUX_PANE")
			sock, _, _ := strings.Cut(tmux, ",")
			if sock == "" || tmuxPane == "" {
				return nil // not running under corral
			}
			req.TmuxSocket, req.TmuxPane = sock, tmuxPane
		}
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		sock, err := config.CheckSocketPath()
		if err != nil {
			fmt.Fprintf(std.Stderr, "corral hook: %v\n", err)
			return nil
		}
		c := client.New(sock)
		var res api.HookResult
		if err := c.Do(ctx, "POST", "/v1/hook", req, &res); err != nil {
			if req.Pane == "" && (errors.Is(err, client.ErrNoDaemon) || isCode(err, "not_watched")) {
				return nil // a tmux pane corral does not watch: nothing to say
			}
			fmt.Fprintf(std.Stderr, "corral hook: %v\n", err)
			return nil
		}
		printHookDecision(std, res)
		return nil
	}
}

// printHookDecision tells the agent a policy's decision on its permission
// request, in the PermissionRequest hook's output shape (Claude Code's and
// Codex's). Anything but a clear allow or deny prints nothing, which
// leaves the request to the person.
func printHookDecision(std IO, res api.HookResult) {
	d := res.Decision
	if d == nil || (d.Behavior != "allow" && d.Behavior != "deny") {
		return
	}
	out, err := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": "PermissionRequest", "decision": d}})
	if err == nil {
		_, _ = std.Stdout.Write(append(out, '\n'))
	}
}

// logHook appends the payload, with the time it arrived, to file when one
// is named ($CORRAL_HOOK_LOG: corral verify records the hook timeline).
// One short write per line with O_APPEND, so concurrent hooks do not
// interleave.
func logHook(file, agent string, payload []byte) {
	if file == "" {
		return
	}
	line, _ := json.Marshal(map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "agent": agent, "payload": json.RawMessage(payload)})
	if f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
		_, _ = f.Write(append(line, '\n'))
		f.Close()
	}
}

// isCode says whether err is the daemon's error with that code.
func isCode(err error, code string) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Code() == code
}
