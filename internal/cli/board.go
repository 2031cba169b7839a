package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/tty"
	"github.com/corral-dev/corral/internal/tui"
)

func runBoard(ctx context.Context, std IO, args []string) error {
	fs := newFlags("board", std)
	_ = fs.Bool("tui", true, "the terminal board (the web board is not built yet)")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if !tty.IsTerminal(int(os.Stdin.Fd())) {
		return usagef("the terminal board needs a terminal; for scripts use corral ls --json or corral events --follow")
	}
	c, err := connect(ctx)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return tui.Run(ctx, c, exe)
}

// demoAgents are the panes `corral demo` starts.
var demoAgents = []string{"api", "web", "docs"}

// runDemo starts three fake agents that work, ask permission, ask
// questions and go idle on their own, then opens the terminal board. It
// needs nothing installed. Quitting the board ends the demo's panes.
func runDemo(ctx context.Context, std IO, args []string) error {
	fs := newFlags("demo", std)
	keep := fs.Bool("keep", false, "leave the demo's agents running after the board closes")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	c, err := connect(ctx)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var ids []string
	for i, name := range demoAgents {
		var p api.Pane
		req := api.RunRequest{Name: "demo-" + name, Command: []string{exe, "fake-agent", "--auto", "--osc7501", "--seed", fmt.Sprint(time.Now().UnixNano() + int64(i))},
			Cwd: os.TempDir(), Cols: 100, Rows: 30, Agent: "claude-code"}
		if err := c.Do(ctx, "POST", "/v1/panes", req, &p); err != nil {
			return apiError(err)
		}
		ids = append(ids, p.ID)
	}
	defer func() {
		if *keep {
			return
		}
		for _, id := range ids {
			_ = c.Do(context.Background(), "POST", "/v1/panes/"+id+"/kill", api.KillRequest{Signal: "TERM"}, nil)
		}
	}()
	if !tty.IsTerminal(int(os.Stdin.Fd())) {
		fmt.Fprintf(std.Stdout, "demo panes: %v\nwatch them with: corral ls, corral events --follow; answer with corral answer demo-api yes\n", ids)
		*keep = true
		return nil
	}
	return tui.Run(ctx, c, exe)
}
