package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/corral-dev/corral/internal/status"
	"github.com/spf13/pflag"
)

func runStatus(fs *pflag.FlagSet) runFunc {
	kind := fs.String("kind", "", "with blocked: permission, question or auth")
	progress := fs.Int("progress", -1, "with working or blocked: percent done, 0-100")
	app := fs.String("app", "", "your program's name, like terraform")
	id := fs.String("id", "", "a child record, like deploy/us-east (none: the program itself)")
	title := fs.String("title", "", "a short title")
	msg := fs.String("msg", "", "one line saying what is going on")
	tty := fs.Bool("tty", false, "write to /dev/tty instead of stdout (when stdout is a pipe)")
	return func(_ context.Context, std IO, pos []string) error {
		if len(pos) != 1 {
			return usagef("need one state: idle, working, blocked, done, error or clear")
		}
		r := status.Report{State: status.State(pos[0]), Kind: status.Kind(*kind), Progress: *progress,
			App: *app, ID: *id, Title: *title, Msg: *msg}
		switch r.State {
		case status.Idle, status.Working, status.Blocked, status.Done, status.Error, status.Clear:
		default:
			return usagef("unknown state %q; use idle, working, blocked, done, error or clear", pos[0])
		}
		if r.Kind != "" && r.State != status.Blocked {
			return usagef("--kind goes with blocked only")
		}
		switch r.Kind {
		case "", status.Permission, status.Question, status.Auth:
		default:
			return usagef("unknown kind %q; use permission, question or auth", *kind)
		}
		if *progress != -1 {
			if r.State != status.Working && r.State != status.Blocked {
				return usagef("--progress goes with working or blocked only")
			}
			if *progress < 0 || *progress > 100 {
				return usagef("--progress %d is not 0-100", *progress)
			}
		}
		if r.State == status.Clear && (r.Kind != "" || r.App != "" || r.Title != "" || r.Msg != "") {
			return usagef("clear takes only --id")
		}
		if err := r.Validate(); err != nil {
			return usagef("%v", err)
		}
		out := std.Stdout
		if *tty {
			f, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
			if err != nil {
				return fmt.Errorf("open /dev/tty: %w (no controlling terminal; drop --tty)", err)
			}
			defer f.Close()
			out = f
		}
		_, err := fmt.Fprint(out, r.Encode())
		return err
	}
}
