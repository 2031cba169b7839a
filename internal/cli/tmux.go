package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/spf13/pflag"
)

// tmuxServerFlags declares -L and -S as tmux itself names a server.
func tmuxServerFlags(fs *pflag.FlagSet) (name, socket *string) {
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

func tmuxWatch(fs *pflag.FlagSet) runFunc {
	name, socket := tmuxServerFlags(fs)
	asJSON := fs.Bool("json", false, "print the watched server as JSON")
	return func(ctx context.Context, std IO, pos []string) error {
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
}

func tmuxUnwatch(fs *pflag.FlagSet) runFunc {
	name, socket := tmuxServerFlags(fs)
	return func(ctx context.Context, std IO, pos []string) error {
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
}

func tmuxLs(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the watched servers as a JSON array")
	return func(ctx context.Context, std IO, pos []string) error {
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
}

func serverLabel(st api.TmuxServer) string {
	if st.Name != "" {
		return "-L " + st.Name
	}
	return "-S " + st.Socket
}
