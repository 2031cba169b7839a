// Package cli is corral's command line: flags in, calls into the internal
// packages, output out. Every command is one row of the commands table and
// one file.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/buildinfo"
	"github.com/corral-dev/corral/internal/tty"
)

// IO is where a command reads and writes.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// StdIO is the process's standard streams.
func StdIO() IO { return IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr} }

type command struct {
	name    string
	args    string
	summary string
	run     func(ctx context.Context, io IO, args []string) error
}

// commands is the CLI, one row per command.
var commands []command

func init() {
	commands = []command{
		{"replay", "[--agent A] [--json] [--screen-only] [--size COLSxROWS] FILE", "run the state engine over a recording and print its state timeline", runReplay},
		{"explain", "[--agent A] [--json] [--at SECONDS] [--size COLSxROWS] FILE|-", "show a screen, every rule tried on it, and which matched and why", runExplain},
		{"rules", "check [DIR] | list [--json]", "validate manifests, or list those in force and where they come from", runRules},
		{"status", "STATE [--kind K] [--progress N] [--app A] [--id ID] [--title T] [--msg M] [--tty]", "print an OSC 7501 status report for the terminal corral runs you in", runStatus},
		{"demo", "[--keep]", "three built-in fake agents on the terminal board: nothing to install", runDemo},
		{"board", "[--addr 127.0.0.1:PORT] [--no-browser] [--listen-any] | --tui", "serve the web board and print its address (--tui: the terminal board, also corral with no arguments)", runBoard},
		{"exec", "[--name N] [--agent claude|codex|gemini|acp] [--mode pipe|pty-lite] [--timeout D] [--stall D] [--policy FILE] [--prompt P] [--env K=V]… [--json] -- CMD ARGS…", "run an agent headless as a job and relay its stream; exit 0 only when the run succeeded, else the agent's own status, 1 (failed though the agent exited 0: no result, an error result), 124 (--timeout), 127 (could not start), 128+N (signal N killed the agent, or interrupted corral exec: the job is killed first)", runExec},
		{"lab", "[--seed N] [--tasks N] [--json] [--osc7501]", "measure every way of telling \"waiting\" side by side on a fake agent, live", runLab},
		{"verify", "[--agent A] [--record DIR] [--json] [-- CMD…] | --headless [--agent A] [--case C,…] [--json|--markdown]", "run an agent CLI through scripted turns (or headless jobs) against a loopback model and check corral at every step", runVerify},
		{"serve", "", "run the daemon in the foreground (other commands start it when needed)", runServe},
		{"run", "[--name N] [--cwd DIR] [--size COLSxROWS] [--agent A] [--env K=V]… [--rm] [--attach] [--json] -- CMD ARGS…", "start a program in a new pane and print its id (--rm: remove the pane when it exits)", runRun},
		{"ls", "[--json]", "list panes and their states", runLs},
		{"screen", "ID [--ansi] [--json]", "print a pane's screen (marks a finished turn seen)", runScreen},
		{"attach", "ID [--detach-key ^\\]", "join a pane's terminal: keys, paste, resize and output pass through; Ctrl-\\ detaches", runAttach},
		{"send", "ID TEXT [--enter] [--force] [--json]", "type into a pane; refused (exit 3) while it is blocked", runSend},
		{"answer", "ID CHOICE [--json]", "answer a pane's prompt: yes, always, no, cancel or an option number; refused (exit 3) unless blocked", runAnswer},
		{"wait", "ID… --state S[,S…] [--timeout D] [--json]", "wait until the panes reach a state (exit 124 on timeout)", runWait},
		{"events", "[--since T] [--follow]", "print state changes as NDJSON", runEvents},
		{"kill", "ID [--signal S] [--json]", "signal a pane's whole process group", runKill},
		{"rm", "ID… [--force] [--json]", "remove ended panes and jobs, freeing their names (--force ends running ones first)", runRm},
		{"shutdown", "", "stop the daemon and every pane", runShutdown},
		{"version", "[--json]", "print this build and the running daemon's, and whether they differ", runVersion},
		{"integrate", "[gemini [--remove]]", "add (or --remove) corral's Gemini CLI extension, the one integration that needs a file; alone: how each agent gets corral's hooks", runIntegrate},
		{"hook", "[--agent A] [PAYLOAD]", "forward an agent hook's report to the daemon (agents run this; it always exits 0)", runHook},
		{"fake-agent", "[--osc7501] [--command CMD]", "", runFakeAgent}, // hidden: demos and tests
		{"fleet", "init [--listen HOST:PORT] [--name N] [--max-jobs N] | join URL[,URL…] (--token T | --creds FILE) [--name N] [--ca-fingerprint F] [--max-jobs N] [--notify-fleet] | status [--json] | leave | invite NAME [--observe-only] [--expires D] [--revoke]", "join several machines' corrals into one fleet through NATS: ls --fleet, events --fleet, pane commands on HOST:ID, exec --fleet [--host H] [--retry N]", runFleet},
		{"help", "[COMMAND]", "show help", runHelp},
	}
}

// Version is set at build time with -ldflags "-X …/cli.Version=…".
var Version = "dev"

// exitError carries an exit status other than 1.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks a mistake in the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// Run runs one command line and returns the exit status.
func Run(ctx context.Context, args []string, io IO) int {
	if len(args) == 0 {
		if f, ok := io.Stdin.(*os.File); !ok || !tty.IsTerminal(int(f.Fd())) {
			printUsage(io.Stderr)
			return 2
		}
		args = []string{"board", "--tui"}
	}
	name, rest := args[0], args[1:]
	if name == "-h" || name == "--help" {
		name = "help"
	}
	if name == "--version" {
		name = "version"
	}
	cmd, ok := lookup(name)
	if !ok {
		fmt.Fprintf(io.Stderr, "corral: unknown command %q; see corral help\n", name)
		return 2
	}
	err := cmd.run(ctx, io, rest)
	if err == nil {
		return 0
	}
	var ue *usageError
	var ee *exitError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(io.Stderr, "corral %s: %s\nusage: corral %s %s\n", cmd.name, ue.msg, cmd.name, cmd.args)
		return 2
	case errors.As(err, &ee):
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintf(io.Stderr, "corral %s: %v\n", cmd.name, ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(io.Stderr, "corral %s: %v\n", cmd.name, err)
	return 1
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: corral COMMAND [ARGS]")
	fmt.Fprintln(w)
	for _, c := range commands {
		if c.summary != "" {
			fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprintln(w, "\nRun corral help COMMAND for a command's flags.")
}

func runHelp(_ context.Context, io IO, args []string) error {
	if len(args) == 0 {
		printUsage(io.Stdout)
		return nil
	}
	c, ok := lookup(args[0])
	if !ok {
		return usagef("unknown command %q", args[0])
	}
	fmt.Fprintf(io.Stdout, "usage: corral %s %s\n\n%s\n", c.name, c.args, c.summary)
	return nil
}

// runVersion prints this build and the running daemon's (without starting
// one), and says when they differ: the daemon keeps running the binary it
// was started from until it is restarted.
func runVersion(ctx context.Context, io IO, args []string) error {
	fs := newFlags("version", io)
	asJSON := fs.Bool("json", false, "print as JSON: {\"client\", \"daemon\", \"same\"}")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	client := buildinfo.Self()
	if Version != "dev" {
		client.Version = Version
	}
	var st api.Status
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	running := clientNoStart().Do(dctx, "GET", "/v1/status", nil, &st) == nil
	if *asJSON {
		out := map[string]any{"client": client, "daemon": nil, "same": nil}
		if running {
			out["daemon"], out["same"] = st.Build, client.Same(st.Build)
		}
		return printJSON(io, out)
	}
	fmt.Fprintln(io.Stdout, client)
	switch {
	case !running:
		fmt.Fprintln(io.Stdout, "daemon: not running")
	case client.Same(st.Build):
		fmt.Fprintf(io.Stdout, "daemon: the same build (pid %d, started %s)\n", st.PID, st.Started)
	default:
		fmt.Fprintf(io.Stdout, "daemon: another build — %s (pid %d, started %s); corral shutdown and the next command starts this one (it ends every pane)\n", st.Build, st.PID, st.Started)
	}
	return nil
}

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(name string, io IO) *flag.FlagSet {
	fs := flag.NewFlagSet("corral "+name, flag.ContinueOnError)
	fs.SetOutput(io.Stderr)
	return fs
}

// parse parses flags that may come before, between or after positional
// arguments, and returns the positional ones. "--" ends flags.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			// The flag package has already said what was wrong.
			return nil, &exitError{code: 2, err: errors.New("")}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseSize reads "COLSxROWS".
func parseSize(s string) (cols, rows int, err error) {
	var c, r int
	if _, err := fmt.Sscanf(s, "%dx%d", &c, &r); err != nil {
		return 0, 0, usagef("size %q must be COLSxROWS, like 120x32", s)
	}
	if c < 2 || r < 2 || c > 1000 || r > 1000 {
		return 0, 0, usagef("size %q: columns and rows must each be from 2 to 1000, like 120x32", s)
	}
	return c, r, nil
}
