package cli

import (
	"context"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/config"
	"github.com/corral-dev/corral/internal/tty"
	tuiboard "github.com/corral-dev/corral/internal/tui"
	"github.com/spf13/pflag"
)

func runBoard(fs *pflag.FlagSet) runFunc {
	tui := fs.Bool("tui", false, "the terminal board instead of the web board")
	addr := fs.String("addr", "127.0.0.1:0", "the `HOST:PORT` the web board listens on (loopback; port 0 picks one)")
	noBrowser := fs.Bool("no-browser", false, "print the address without opening a browser")
	listenAny := fs.Bool("listen-any", false, "allow an address other than loopback (anyone who can reach it and has the token can drive your agents)")
	asJSON := fs.Bool("json", false, "print the sign-in addresses as JSON, {\"url\", \"urls\", \"started\"}, and open no browser")
	return func(ctx context.Context, std IO, _ []string) error {
		if *tui && *asJSON {
			return usagef("--json goes with the web board, not --tui")
		}
		if !*tui {
			return runWebBoard(ctx, std, *addr, *noBrowser, *listenAny, *asJSON)
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
}

func runWebBoard(ctx context.Context, std IO, addr string, noBrowser, listenAny, asJSON bool) error {
	c, err := connect(ctx)
	if err != nil {
		return err
	}
	var res api.BoardResult
	if err := c.Do(ctx, "POST", "/v1/board", api.BoardRequest{Addr: addr, ListenAny: listenAny}, &res); err != nil {
		return apiError(err)
	}
	urls := res.URLs
	if len(urls) == 0 {
		urls = []string{res.URL}
	}
	if asJSON {
		res.URLs = urls
		return printJSON(std, res)
	}
	if listenAny {
		fmt.Fprintln(std.Stderr, "corral board: warning: listening beyond loopback; anyone who signs in at one of these addresses can answer and kill your agents")
	}
	if !res.Started {
		fmt.Fprintln(std.Stderr, "corral board: the web board was already running; its address is unchanged")
	}
	if !noBrowser {
		if opener, err := exec.LookPath("xdg-open"); err == nil {
			// A command line is readable by every local user
			// (/proc/PID/cmdline): the browser gets the sign-in address
			// through a page only the user can read.
			page, err := launchPage(urls[0])
			if err == nil {
				err = exec.Command(opener, page).Start()
			}
			if err == nil {
				for _, u := range urls {
					fmt.Fprintln(std.Stdout, strings.SplitN(u, "?", 2)[0])
				}
				fmt.Fprintln(std.Stderr, "corral board: opened in your browser; for another browser, corral board --no-browser prints a one-time sign-in address")
				return nil
			}
			fmt.Fprintf(std.Stderr, "corral board: cannot open a browser (%v); open the address below yourself\n", err)
		}
	}
	for _, u := range urls {
		fmt.Fprintln(std.Stdout, u)
	}
	fmt.Fprintln(std.Stderr, "corral board: the address signs you in once, within 2 minutes; run corral board again for another")
	return nil
}

// launchPage writes a page that sends the browser on to signIn into a
// folder only the user can read (the daemon's socket folder, or a new
// private one) and returns its path.
func launchPage(signIn string) (string, error) {
	dir := filepath.Dir(config.SocketPath())
	if !privateDir(dir) {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("corral-board-%d", os.Getuid()))
		_ = os.Mkdir(dir, 0o700)
	}
	if !privateDir(dir) { // someone else's, or opened up
		d, err := os.MkdirTemp("", "corral-board-")
		if err != nil {
			return "", fmt.Errorf("a private folder for the board's sign-in page: %w", err)
		}
		dir = d
	}
	f, err := os.CreateTemp(dir, ".board-*.html") // mode 0600
	if err != nil {
		return "", fmt.Errorf("the board's sign-in page: %w", err)
	}
	u := html.EscapeString(signIn)
	_, err = fmt.Fprintf(f, `<!doctype html>
<html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<meta http-equiv="refresh" content="0; url=%s">
<title>corral board</title></head>
<body><p>Opening the corral board. If nothing happens, <a href="%s">open it</a> (this signs you in once, within 2 minutes of corral board).</p></body></html>
`, u, u)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	page := filepath.Join(dir, "board.html")
	if err == nil {
		err = os.Rename(f.Name(), page)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("the board's sign-in page: %w", err)
	}
	return page, nil
}

// privateDir says dir is a folder of the user's that no one else may enter.
func privateDir(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// demoAgents are the panes `corral demo` starts.
var demoAgents = []string{"api", "web", "docs"}

// runDemo starts three fake agents that work, ask permission, ask
// questions and go idle on their own, then opens the terminal board. It
// needs nothing installed. Quitting the board ends the demo's panes.
func runDemo(fs *pflag.FlagSet) runFunc {
	keep := fs.Bool("keep", false, "leave the demo's agents running after the board closes")
	return func(ctx context.Context, std IO, _ []string) error {
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
				_ = c.Do(context.Background(), "POST", panePath(id, "kill"), api.KillRequest{}, nil)
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
}
