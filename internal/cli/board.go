package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/tty"
	tuiboard "github.com/corral-dev/corral/internal/tui"
)

func runBoard(ctx context.Context, std IO, args []string) error {
	fs := newFlags("board", std)
	tui := fs.Bool("tui", false, "the terminal board instead of the web board")
	addr := fs.String("addr", "127.0.0.1:0", "where the web board listens (loopback; port 0 picks one)")
	noBrowser := fs.Bool("no-browser", false, "print the address without opening a browser")
	listenAny := fs.Bool("listen-any", false, "allow an address other than loopback (anyone who can reach it and has the token can drive your agents)")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if !*tui {
		return runWebBoard(ctx, std, *addr, *noBrowser, *listenAny)
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
	return tuiboard.Run(ctx, c, exe, "")
}

func runWebBoard(ctx context.Context, std IO, addr string, noBrowser, listenAny bool) error {
	c, err := connect(ctx)
	if err != nil {
		return err
	}
	var res api.BoardResult
	if err := c.Do(ctx, "POST", "/v1/board", api.BoardRequest{Addr: addr, ListenAny: listenAny}, &res); err != nil {
		return apiError(err)
	}
	fmt.Fprintln(std.Stdout, res.URL)
	if listenAny {
		fmt.Fprintln(std.Stderr, "corral board: warning: listening beyond loopback; anyone with the address and token can answer and kill your agents")
	}
	if !res.Started {
		fmt.Fprintln(std.Stderr, "corral board: the web board was already running; its address is unchanged")
	}
	if !noBrowser {
		if opener, err := exec.LookPath("xdg-open"); err == nil {
			_ = exec.Command(opener, res.URL).Start()
		}
	}
	return nil
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
			_ = c.Do(context.Background(), "POST", panePath(id, "kill"), api.KillRequest{Signal: "TERM"}, nil)
		}
	}()
	var web api.BoardResult
	if err := c.Do(ctx, "POST", "/v1/board", api.BoardRequest{Addr: "127.0.0.1:0"}, &web); err != nil {
		return apiError(err)
	}
	fmt.Fprintf(std.Stdout, "web board: %s\n", web.URL)
	if !tty.IsTerminal(int(os.Stdin.Fd())) {
		fmt.Fprintf(std.Stdout, "demo panes: %v\nwatch them with: corral ls, corral events --follow; answer with corral answer demo-api yes\n", ids)
		*keep = true
		return nil
	}
	return tuiboard.Run(ctx, c, exe, "web board: "+web.URL)
}
