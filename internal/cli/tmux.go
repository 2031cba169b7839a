package cli

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/corral-dev/corral/internal/api"
)

// tmuxServerFlags declares -L and -S as tmux itself names a server.
func tmuxServerFlags(fs *flag.FlagSet) (name, socket *string) {
	name = fs.String("L", "", "the tmux server's socket name, as tmux -L NAME (default: the user's default server)")
	socket = fs.String("S", "", "the tmux server's socket path, as tmux -S PATH")
	return name, socket
}

func tmuxRequest(name, socket string) (api.TmuxRequest, error) {
	if name != "" && socket != "" {
		return api.TmuxRequest{}, usagef("give -L NAME or -S PATH, not both")
	}
	if socket != "" {
		abs, err := filepath.Abs(socket)
		if err != nil {
			return api.TmuxRequest{}, fmt.Errorf("tmux socket %s: %w", socket, err)
		}
		socket = abs
	}
	return api.TmuxRequest{Name: name, Socket: socket}, nil
}

func tmuxWatch(ctx context.Context, std IO, args []string) error {
	fs := newFlags("tmux watch", std)
	name, socket := tmuxServerFlags(fs)
	asJSON := fs.Bool("json", false, "print the watched server as JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("tmux watch takes no arguments; name the server with -L NAME or -S PATH")
	}
	req, err := tmuxRequest(*name, *socket)
	if err != nil {
		return err
	}
	c, err := connect(ctx)
	if err != nil {
		return err
	}
	var st api.TmuxServer
	if err := c.Do(ctx, "POST", "/v1/tmux/watch", req, &st); err != nil {
		return apiError(err)
	}
	if *asJSON {
		return printJSON(std, st)
	}
	if !st.Running {
		why := st.Error
		if why == "" {
			why = "no tmux server answers at " + st.Socket
		}
		fmt.Fprintf(std.Stdout, "watching tmux %s: not running now (%s); its panes appear in corral ls when it starts\n", serverLabel(st), why)
		return nil
	}
	fmt.Fprintf(std.Stdout, "watching tmux %s: %d sessions, %d panes; see them with corral ls\n", serverLabel(st), st.Sessions, st.Panes)
	return nil
}

func tmuxUnwatch(ctx context.Context, std IO, args []string) error {
	fs := newFlags("tmux unwatch", std)
	name, socket := tmuxServerFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("tmux unwatch takes no arguments; name the server with -L NAME or -S PATH")
	}
	req, err := tmuxRequest(*name, *socket)
	if err != nil {
		return err
	}
	c, err := connect(ctx)
	if err != nil {
		return err
	}
	if err := c.Do(ctx, "POST", "/v1/tmux/unwatch", req, nil); err != nil {
		return apiError(err)
	}
	return nil
}

func tmuxLs(ctx context.Context, std IO, args []string) error {
	fs := newFlags("tmux ls", std)
	asJSON := fs.Bool("json", false, "print the watched servers as a JSON array")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("tmux ls takes no arguments")
	}
	c, err := connect(ctx)
	if err != nil {
		return err
	}
	var list []api.TmuxServer
	if err := c.Do(ctx, "GET", "/v1/tmux", nil, &list); err != nil {
		return apiError(err)
	}
	if list == nil {
		list = []api.TmuxServer{}
	}
	if *asJSON {
		return printJSON(std, list)
	}
	tw := tabwriter.NewWriter(std.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSOCKET\tRUNNING\tSINCE\tSESSIONS\tPANES\tPROBLEM")
	for _, st := range list {
		since := ""
		if t, err := time.Parse(time.RFC3339Nano, st.Since); err == nil {
			since = time.Since(t).Round(time.Second).String() + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%d\t%d\t%s\n", serverLabel(st), st.Socket, st.Running, since, st.Sessions, st.Panes, st.Error)
	}
	return tw.Flush()
}

func serverLabel(st api.TmuxServer) string {
	if st.Name != "" {
		return "-L " + st.Name
	}
	return "-S " + st.Socket
}
