// Package cli is corral's command line: flags in, calls into the internal
// packages, output out. Every command is one row of the commands table and
// one file.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/buildinfo"
	"github.com/corral-dev/corral/internal/tty"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// IO is where a command reads and writes.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// StdIO is the process's standard streams.
func StdIO() IO { return IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr} }

// command is one row of the commands table, the whole CLI in one place.
// The cobra command tree is built from it (tree.go); a command declares
// its flags in its own run function, on the flag set it is given, so
// help, completion and the man pages read them from there.
type command struct {
	name    string // "rules list": a subcommand, shown on its parent's page
	group   string // where corral help lists it; "" hides it
	args    string // the synopsis after the name; flags are listed from the flag set
	summary string
	example string // one or more command lines, one per line
	run     func(fs *pflag.FlagSet) runFunc
	// rawArgs: its arguments reach it untouched, no flag parsed (the
	// daemon's helpers, which read their own).
	rawArgs bool
	// keepDash: "--" stays among its arguments, since what follows it is
	// a program's command line, flags included.
	keepDash bool
	// For completion: which positional arguments are panes (ids and names
	// from the running daemon), and the words the first one that is not a
	// pane may be.
	panes   paneArgs
	choices []string
}

// paneArgs says which of a command's positional arguments are panes.
type paneArgs int

const (
	noPane   paneArgs = iota
	onePane           // the first
	allPanes          // every one
)

// runFunc runs a command with its positional arguments, its flags parsed.
type runFunc func(ctx context.Context, std IO, args []string) error

// The groups of corral help, in order.
const (
	grpEveryday = "Everyday commands"
	grpPanes    = "Panes and the daemon"
	grpAgents   = "Agents, rules and recordings"
	grpOther    = "Other commands"
	grpSub      = "subcommand" // listed on the parent's page only
)

var groups = []string{grpEveryday, grpPanes, grpAgents, grpOther}

// commands is the CLI, one row per command.
var commands []command

func init() {
	commands = []command{
		{name: "run", group: grpEveryday, args: "[flags] -- CMD ARGS…", summary: "start a program in a new pane and print its id (--rm: remove the pane when it exits)", example: "corral run --name api -- claude\ncorral run --rm --attach -- bash", run: runRun, keepDash: true},
		{name: "ls", group: grpEveryday, args: "[flags]", summary: "list panes and their states", example: "corral ls --json", run: runLs},
		{name: "attach", group: grpEveryday, args: "ID [flags]", summary: "join a pane's terminal: keys, paste, resize and output pass through; Ctrl-\\ detaches", example: "corral attach api", run: runAttach, panes: onePane},
		{name: "answer", group: grpEveryday, args: "ID [CHOICE] [flags]", summary: "answer a pane's prompt: yes, always, no, cancel, an option number or a choice of the prompt's own; alone, list what it takes; refused (exit 3) unless blocked", example: "corral answer api yes\ncorral answer api", run: runAnswer, panes: onePane, choices: []string{"yes", "always", "no", "cancel", "1", "2", "3"}},
		{name: "send", group: grpEveryday, args: "ID TEXT [flags]", summary: "type into a pane; refused (exit 3) while it is blocked", example: "corral send api 'run the tests' --enter", run: runSend, panes: onePane},
		{name: "wait", group: grpEveryday, args: "ID… --state S[,S…] [flags]", summary: "wait until the panes reach a state (exit 124 on timeout)", example: "corral wait api web --state idle,blocked --timeout 10m", run: runWait, panes: allPanes},
		{name: "board", group: grpEveryday, args: "[flags]", summary: "serve the web board and print its address (--tui: the terminal board, also corral with no arguments)", example: "corral board --no-browser\ncorral board --tui", run: runBoard},
		{name: "fleet", group: grpPanes, args: "init|join|join-hub|status|leave|invite|forget|set [flags]", summary: "join several machines' corrals into one fleet through NATS: ls --fleet, events --fleet, pane commands on HOST:ID, exec --fleet [--host H] [--retry N]", example: "corral fleet init --listen 0.0.0.0:4222 --name hub\ncorral fleet status", run: subcommands("fleet")},
		{name: "fleet init", group: grpSub, args: "[flags]", summary: "make this host a fleet's hub (an embedded NATS server with JetStream) and print the command other hosts run to join", example: "corral fleet init --listen 0.0.0.0:4222 --name hub", run: fleetInit},
		{name: "fleet join", group: grpSub, args: "URL[,URL…] [flags]", summary: "join a fleet: this daemon connects to its NATS servers and stays connected", example: "corral fleet join nats://hub:4222 --token TOKEN --ca-fingerprint F", run: fleetJoin},
		{name: "fleet join-hub", group: grpSub, args: "URL[,URL…] --hub-token T --cluster-listen HOST:PORT", summary: "make this host one more hub of a fleet whose hubs form a cluster (so no single hub is needed)", example: "corral fleet join-hub tls://hub1:7422 --hub-token T --ca-fingerprint F --cluster-listen 10.0.0.2:7423", run: fleetJoinHub},
		{name: "fleet status", group: grpSub, args: "[flags]", summary: "one row per host: reachable, last seen, panes, jobs, whether it takes jobs for any host, its access (control or observe-only), version", example: "corral fleet status --json", run: fleetStatus},
		{name: "fleet leave", group: grpSub, summary: "leave the fleet (a hub stops serving it)", example: "corral fleet leave", run: fleetLeave},
		{name: "fleet invite", group: grpSub, args: "NAME [flags]", summary: "make a per-host credential that can be revoked, and print its join command", example: "corral fleet invite laptop --expires 720h\ncorral fleet invite laptop --revoke", run: fleetInvite},
		{name: "fleet forget", group: grpSub, args: "HOST", summary: "on the hub: remove a host that is gone for good (its panes, its heartbeat) from the fleet's views", example: "corral fleet forget old-laptop", run: fleetForget},
		{name: "fleet set", group: grpSub, args: "[--max-jobs N] [--forget-after D]", summary: "change how many fleet jobs this host takes, or on the hub the fleet's settings (how long an unreachable host stays in its views)", example: "corral fleet set --max-jobs 2\ncorral fleet set --forget-after 72h", run: fleetSet},
		{name: "tmux", group: grpPanes, args: "watch|unwatch|ls [flags]", summary: "watch the agents you already run in tmux: every pane of a tmux server becomes a corral pane (states, answers, boards), through tmux control mode", example: "corral tmux watch\ncorral tmux watch -L work\ncorral tmux ls", run: subcommands("tmux")},
		{name: "tmux watch", group: grpSub, args: "[-L NAME | -S PATH] [flags]", summary: "watch a tmux server (default: yours): its panes, and those created later, become corral panes; remembered across daemon restarts", example: "corral tmux watch\ncorral tmux watch -S /tmp/tmux-1000/default", run: tmuxWatch},
		{name: "tmux unwatch", group: grpSub, args: "[-L NAME | -S PATH]", summary: "stop watching a tmux server: its panes leave corral's list and run on in tmux, untouched", example: "corral tmux unwatch -L work", run: tmuxUnwatch},
		{name: "tmux ls", group: grpSub, args: "[flags]", summary: "list the tmux servers watched: running, sessions, panes", example: "corral tmux ls --json", run: tmuxLs},
		{name: "screen", group: grpPanes, args: "ID [flags]", summary: "print a pane's screen (marks a finished turn seen)", example: "corral screen api --ansi", run: runScreen, panes: onePane},
		{name: "events", group: grpPanes, args: "[flags]", summary: "print state changes as NDJSON", example: "corral events --since 1h\ncorral events --follow", run: runEvents},
		{name: "kill", group: grpPanes, args: "ID [flags]", summary: "signal a pane's whole process group", example: "corral kill api --signal INT", run: runKill, panes: onePane},
		{name: "rm", group: grpPanes, args: "ID… [flags]", summary: "remove ended panes and jobs, freeing their names (--force ends running ones first)", example: "corral rm api web --force", run: runRm, panes: allPanes},
		{name: "serve", group: grpPanes, args: "[flags]", summary: "run the daemon in the foreground (other commands start it when needed); --replace takes the running daemon's panes over", example: "corral serve\ncorral serve --replace", run: runServe},
		{name: "restart", group: grpPanes, summary: "hand every pane over to a new daemon of this binary (an upgrade that ends nothing)", example: "corral restart", run: runRestart},
		{name: "restore", group: grpPanes, args: "[ID…] [flags]", summary: "after a reboot, start again the panes whose programs were lost (corral ls shows them as lost), resuming agent conversations where the agent allows (--forget: drop them)", example: "corral restore --json\ncorral restore api web\ncorral restore --forget", run: runRestore},
		{name: "shutdown", group: grpPanes, summary: "stop the daemon and every pane", example: "corral shutdown", run: runShutdown},
		{name: "exec", group: grpAgents, args: "[flags] -- CMD ARGS…", summary: "run an agent headless as a job and relay its stream; exit 0 only when the run succeeded, else the agent's own status, 1 (failed though the agent exited 0: no result, an error result), 124 (--timeout), 127 (could not start), 128+N (signal N killed the agent, or interrupted corral exec: the job is killed first)", example: "corral exec --timeout 10m -- claude -p 'fix the build' --output-format stream-json --verbose", run: runExec, keepDash: true},
		{name: "jobs", group: grpAgents, args: "[--fleet] [--json]", summary: "list the jobs that have not ended (corral exec): this daemon's, or with --fleet the fleet's, queued and running, each with its host", example: "corral jobs --fleet", run: runJobs},
		{name: "policy", group: grpAgents, args: "explain|check [flags]", summary: "show how a permission request would be decided by a policy (corral run --policy, corral exec --policy)", example: "corral policy check policy.toml", run: subcommands("policy")},
		{name: "policy explain", group: grpSub, args: "[flags] TOOL [INPUT] | --payload FILE|-", summary: "show every rule tried on a request, the one that decides, and what a pane and corral exec do with it", example: "corral policy explain --policy policy.toml Bash '{\"command\": \"go test ./...\"}'", run: policyExplain},
		{name: "policy check", group: grpSub, args: "FILE [flags]", summary: "validate a policy file", example: "corral policy check ~/.config/corral/policy.toml", run: policyCheck},
		{name: "rules", group: grpAgents, args: "check [DIR|FILE] | list [flags]", summary: "validate manifests, or list those in force and where they come from", example: "corral rules check ~/.config/corral/rules\ncorral rules list --json", run: subcommands("rules")},
		{name: "rules check", group: grpSub, args: "[DIR|FILE] [flags]", summary: "validate rule manifests: a folder, a file, or the built-in and your own (exit 1 if any is broken)", example: "corral rules check ~/.config/corral/rules/codex.toml", run: runRulesCheck},
		{name: "rules list", group: grpSub, args: "[flags]", summary: "list the manifests in force and where they come from (the running daemon's, else what it would load)", example: "corral rules list --json", run: runRulesList},
		{name: "explain", group: grpAgents, args: "[flags] FILE|-", summary: "show a screen, every rule tried on it, and which matched and why", example: "corral screen api | corral explain -", run: runExplain},
		{name: "replay", group: grpAgents, args: "[flags] FILE", summary: "run the state engine over a recording and print its state timeline", example: "corral replay --json session.cast", run: runReplay},
		{name: "verify", group: grpAgents, args: "[flags] [-- CMD…] | --headless [flags]", summary: "run an agent CLI through scripted turns (or headless jobs) against a loopback model and check corral at every step", example: "corral verify --agent claude-code\ncorral verify --headless --agent codex --case deny", run: runVerify, keepDash: true},
		{name: "integrate", group: grpAgents, args: "[gemini [flags]]", summary: "add (or --remove) corral's Gemini CLI extension, the one integration that needs a file; alone: how each agent gets corral's hooks", example: "corral integrate gemini", run: runIntegrate, choices: []string{"gemini"}},
		{name: "status", group: grpAgents, args: "STATE [flags]", summary: "print an OSC 7501 status report for the terminal corral runs you in", example: "corral status working --progress 40 --msg 'building'\ncorral status blocked --kind question --msg 'deploy to prod?'", run: runStatus, choices: []string{"idle", "working", "blocked", "done", "error", "clear"}},
		{name: "demo", group: grpOther, args: "[flags]", summary: "three built-in fake agents on the terminal board: nothing to install", example: "corral demo", run: runDemo},
		{name: "lab", group: grpOther, args: "[flags]", summary: "measure every way of telling \"waiting\" side by side on a fake agent, live", example: "corral lab --tasks 10 --osc7501", run: runLab},
		{name: "doctor", group: grpOther, args: "[--json]", summary: "check this machine's setup: folders, daemon, tmux, agents, integrations, notifications, fleet; say how to fix what is off", example: "corral doctor", run: runDoctor},
		{name: "version", group: grpOther, args: "[flags]", summary: "print this build and the running daemon's, and whether they differ", example: "corral version --json", run: runVersion},
		{name: "completion", group: grpOther, args: "bash|zsh|fish|powershell", summary: "print a shell completion script: commands, flags, and pane ids and names from the running daemon", example: "source <(corral completion bash)\ncorral completion fish > ~/.config/fish/completions/corral.fish", run: runCompletion, choices: []string{"bash", "zsh", "fish", "powershell"}},
		{name: "help", group: grpOther, args: "[COMMAND]", summary: "show the commands, or a command's flags and an example", example: "corral help run", run: runHelp},
		{name: "hook", group: grpAgents, args: "[flags] [PAYLOAD]", summary: "forward an agent hook's report to the daemon (agents run this; it always exits 0)", example: "echo '{\"hook_event_name\": \"Stop\"}' | corral hook --agent claude-code", run: runHook},
		{name: "docs", group: grpOther, args: "man|markdown DIR", summary: "write the CLI reference: a man page per command, or Markdown (docs/cli)", example: "corral docs man ~/.local/share/man/man1\ncorral docs markdown docs/cli", run: subcommands("docs")},
		{name: "docs man", group: grpSub, args: "DIR", summary: "write one man page per command into DIR (section 1)", example: "corral docs man ~/.local/share/man/man1", run: docsMan},
		{name: "docs markdown", group: grpSub, args: "DIR", summary: "write the CLI reference as Markdown into DIR, one file per command", example: "corral docs markdown docs/cli", run: docsMarkdown},
		{name: "fake-agent", args: "[--osc7501] [--command CMD]", run: raw(runFakeAgent), rawArgs: true}, // demos and tests
		{name: "hold", run: raw(runHold), rawArgs: true},       // a pane's holder, started by the daemon
		{name: "guard", run: raw(runGuard), rawArgs: true},     // a headless job's guard, started by the daemon
		{name: "jobhold", run: raw(runJobHold), rawArgs: true}, // a held headless job's holder, started by the daemon
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
type usageError struct {
	msg string
	cmd string // the (sub)command whose synopsis to show; "" the one run
}

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// raw makes a run function that declares no flags.
func raw(run runFunc) func(*pflag.FlagSet) runFunc {
	return func(*pflag.FlagSet) runFunc { return run }
}

// Run runs one command line and returns the exit status.
func Run(ctx context.Context, args []string, io IO) int {
	if len(args) == 0 {
		if f, ok := io.Stdin.(*os.File); !ok || !tty.IsTerminal(int(f.Fd())) {
			printUsage(io.Stderr)
			return 2
		}
		args = []string{"board", "--tui"}
	}
	switch args[0] {
	case "-h", "--help", "-help":
		args = append([]string{"help"}, args[1:]...)
	case "--version", "-version":
		args = append([]string{"version"}, args[1:]...)
	}
	name := args[0]
	if _, ok := lookup(name); (!ok || strings.Contains(name, " ")) && name != cobra.ShellCompRequestCmd && name != cobra.ShellCompNoDescRequestCmd {
		msg := fmt.Sprintf("corral: unknown command %q", name)
		if strings.HasPrefix(name, "-") {
			msg = fmt.Sprintf("corral: %s goes after a command, like corral run %s", dashed(name), dashed(name))
		} else if near := closest(name, commandNames()); near != "" {
			msg += fmt.Sprintf("; did you mean corral %s?", near)
		}
		fmt.Fprintf(io.Stderr, "%s\nRun corral help for the commands.\n", msg)
		return 2
	}
	if name == "hold" || name == "guard" || name == "jobhold" {
		// The daemon starts these, and a holder lives as long as its
		// panes: without the command tree (every command's flags, help
		// and completion), which would stay on its heap all that while.
		c, _ := lookup(name)
		err := c.run(pflag.NewFlagSet(name, pflag.ContinueOnError))(ctx, io, args[1:])
		return exitCode(name, name, io, err, func() *cobra.Command { return newTree(io, args) })
	}
	if name != "hook" { // its stderr is a log, kept as is
		io = safeIO(name, io)
	}
	root := newTree(io, args)
	cmd, err := root.ExecuteContextC(ctx)
	return exitCode(name, pathOf(cmd), io, err, func() *cobra.Command { return root })
}

// exitCode reports a command's error and returns its exit status. page is
// the command that ran ("rules list"); tree gives the command tree.
func exitCode(name, page string, io IO, err error, tree func() *cobra.Command) int {
	if err == nil {
		return 0
	}
	var ue *usageError
	var ee *exitError
	switch {
	case errors.As(err, &ue):
		if ue.cmd != "" {
			page = ue.cmd
		}
		if c, _, err := tree().Find(strings.Fields(page)); err == nil {
			fmt.Fprintf(io.Stderr, "corral %s: %s\nusage: %s\nRun corral help %s for the flags and an example.\n", page, ue.msg, synopsis(c), page)
		} else {
			fmt.Fprintf(io.Stderr, "corral %s: %s\n", page, ue.msg)
		}
		return 2
	case errors.As(err, &ee):
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintf(io.Stderr, "corral %s: %v\n", name, ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(io.Stderr, "corral %s: %v\n", name, err) // the command typed first, a subcommand's too
	return 1
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name && c.run != nil {
			return c, true
		}
	}
	return command{}, false
}

// commandNames are the commands a user may type first.
func commandNames() []string {
	var names []string
	for _, c := range commands {
		if c.group != "" && c.group != grpSub {
			names = append(names, c.name)
		}
	}
	return names
}

// runVersion prints this build and the running daemon's (without starting
// one), and says when they differ: the daemon keeps running the binary it
// was started from until it is restarted.
func runVersion(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print as JSON: {\"client\", \"daemon\", \"same\"}")
	return func(ctx context.Context, io IO, _ []string) error {
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
			fmt.Fprintf(io.Stdout, "daemon: another build — %s (pid %d, started %s); corral restart hands its panes over to this one (they keep running)\n", st.Build, st.PID, st.Started)
		}
		return nil
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
