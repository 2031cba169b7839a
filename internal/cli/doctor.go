package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"

	"github.com/corral-dev/corral/internal/buildinfo"
	"github.com/corral-dev/corral/internal/config"
	"github.com/corral-dev/corral/internal/doctor"
	"github.com/corral-dev/corral/internal/tty"
	"github.com/spf13/pflag"
)

// runDoctor checks this machine's setup (internal/doctor) and prints one
// line per check, with the fix under what is off; exit 1 when a check
// failed. It starts nothing: the daemon is only asked, never started.
func runDoctor(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print as JSON: {\"checks\": [{\"name\", \"status\", \"found\", \"fix\"}…], \"ok\"}; status is ok, warn, fail or skip")
	return func(ctx context.Context, std IO, pos []string) error {
		if len(pos) > 0 {
			return usagef("doctor takes no arguments, only flags")
		}
		// What doctor prints comes from outside (versions agents print, paths,
		// settings files): it goes through the terminal-safe writer whatever
		// the command table says of it.
		if _, ok := std.Stdout.(*safeWriter); !ok {
			std.Stdout = &safeWriter{w: std.Stdout}
		}
		env := doctor.Real(doctor.Paths{Socket: config.SocketPath(), State: config.StateDir(), Config: config.ConfigPath()})
		env.StdoutTerminal = isTerminal(std.Stdout)
		self := buildinfo.Self()
		if Version != "dev" {
			self.Version = Version
		}
		env.Self = self
		env.Config = sync.OnceValues(func() (doctor.Notify, error) {
			cfg, err := config.LoadConfig(env.ConfigPath)
			if err != nil {
				return doctor.Notify{}, err
			}
			n := cfg.Notify
			return doctor.Notify{On: n.On, Desktop: n.Desktop, Bell: n.Bell, Webhook: n.Webhook, Command: n.Command}, nil
		})
		report := doctor.Run(ctx, env)
		var err error
		if *asJSON {
			err = printJSON(std, report)
		} else {
			err = doctor.WriteText(std.Stdout, report)
		}
		if err != nil {
			return err
		}
		if !report.OK {
			// The report said what failed; the exit status only counts it.
			return &exitError{code: 1, err: errors.New("")}
		}
		return nil
	}
}

// isTerminal reports whether w, under the safe writer, is a terminal.
func isTerminal(w io.Writer) bool {
	if s, ok := w.(*safeWriter); ok {
		w = s.w
	}
	f, ok := w.(*os.File)
	return ok && tty.IsTerminal(int(f.Fd()))
}
