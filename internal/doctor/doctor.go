// Package doctor checks a machine's setup for corral: the operating
// system and terminal, the state and socket folders, the config file, the
// daemon, tmux, the agent CLIs and their integrations, the notification
// backends and the fleet. Each check says what it found and, when
// something is off, how to fix it.
//
// The checks read the machine only through an Env, so that tests give
// them fakes; Real returns one that reads this machine.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/buildinfo"
	"github.com/corral-dev/corral/internal/fleet"
)

// Status is a check's verdict.
type Status string

// The verdicts. A warning does not fail corral doctor; a failure does.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
	Skip Status = "skip" // not applicable here
)

// Check is one line of the report.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Found  string `json:"found"`
	// Fix is what to run or set to mend it; "" when there is nothing to do.
	Fix string `json:"fix"`
}

// Report is every check, in order; OK is false when any failed.
type Report struct {
	Checks []Check `json:"checks"`
	OK     bool    `json:"ok"`
}

// Timeouts: no check waits longer than these, whatever answers or not.
const (
	DaemonTimeout = 2 * time.Second // a ping of the daemon's socket
	DialTimeout   = 3 * time.Second // the fleet's hub
)

// CommandTimeout bounds tmux -V and NAME --version. A variable for the
// tests, whose agent's --version never ends on purpose.
var CommandTimeout = 5 * time.Second

// FileInfo is what the folder checks need of a file, as Lstat sees it.
type FileInfo struct {
	IsDir  bool
	IsLink bool
	UID    int // -1 when it cannot be read
	Mode   fs.FileMode
}

// Notify is the [notify] table of the config file, as far as the checks
// need it.
type Notify struct {
	On      []string
	Desktop *bool
	Bell    *bool
	Webhook string
	Command []string
}

// FleetState is what the running daemon says of its fleet
// (GET /v1/fleet/status).
type FleetState struct {
	Name    string `json:"name"`
	Hub     bool   `json:"hub"`
	URL     string `json:"url"`
	Joined  bool   `json:"joined"`
	Refused int64  `json:"connections_refused"`
	LastWhy string `json:"last_refusal"`
	// Member is the daemon's connection to the fleet, once it made one.
	Member *struct {
		Connected bool   `json:"connected"`
		LastError string `json:"last_error"`
	} `json:"member"`
}

// ErrNoDaemon is what Env.Daemon returns when nothing answers on the
// socket; any other error means something answered, or failed to, oddly.
var ErrNoDaemon = errors.New("no corral daemon is running")

// ErrNoFleet is what Env.DaemonFleet returns when the running daemon is
// in no fleet.
var ErrNoFleet = errors.New("the daemon is in no fleet")

// Env is everything the checks read. Every function must be safe to call
// from several goroutines at once.
type Env struct {
	GOOS, GOARCH string
	Getenv       func(key string) string
	// StdoutTerminal: corral doctor's own output goes to a terminal.
	StdoutTerminal bool
	Cwd, Home      string
	UID            int

	// SocketPath, StateDir and ConfigPath are where corral puts them
	// (config.SocketPath, StateDir, ConfigPath).
	SocketPath, StateDir, ConfigPath string
	// Self is this binary's build.
	Self buildinfo.Info

	LookPath func(file string) (string, error)
	// Run runs a command with stdin from /dev/null and no terminal, and
	// returns what it printed; it gives up after timeout.
	Run      func(ctx context.Context, timeout time.Duration, argv ...string) (string, error)
	ReadFile func(path string) ([]byte, error)
	// Lstat reads a file without following a last symbolic link; an error
	// satisfying errors.Is(err, fs.ErrNotExist) means it is not there.
	Lstat func(path string) (FileInfo, error)
	// RealPath resolves symbolic links; it returns p itself when it cannot.
	RealPath func(p string) string
	Now      func() time.Time

	// Daemon asks the daemon for its status (ErrNoDaemon: none runs).
	Daemon func(ctx context.Context) (api.Status, error)
	// DaemonFleet asks the running daemon about its fleet.
	DaemonFleet func(ctx context.Context) (FleetState, error)
	// Dial opens (and closes) a TCP connection to HOST:PORT.
	Dial func(ctx context.Context, address string) error

	// Config reads the config file's [notify] table; a missing file is the
	// defaults, an error means the daemon refuses the file.
	Config func() (Notify, error)
	// FleetConfig reads fleet/config.json (fleet.ErrNotConfigured: none).
	FleetConfig func() (fleet.Config, error)
	// GeminiInstalled says whether corral's Gemini CLI extension is under
	// home (agents.GeminiInstalled).
	GeminiInstalled func(home string) bool
	// ClaudeGlobal says where Claude Code's user settings are and whether
	// corral's hooks are in them (corral integrate claude-code --global).
	ClaudeGlobal func() (path string, installed bool, err error)
}

// group is a run of checks that belong together; groups run at once.
type group func(ctx context.Context, e *Env) []Check

var groups = []group{systemChecks, folderChecks, configCheck, daemonCheck, tmuxChecks, agentChecks, notifyChecks, fleetChecks}

// Run runs every check and returns the report. The checks that wait
// (the daemon, tmux, the agents, the hub) run at the same time, each
// bounded by its timeout, so the whole takes about the longest of them.
func Run(ctx context.Context, e *Env) Report {
	results := make([][]Check, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = g(ctx, e)
		}()
	}
	wg.Wait()
	r := Report{Checks: []Check{}, OK: true}
	for _, cs := range results {
		for _, c := range cs {
			if c.Status == Fail {
				r.OK = false
			}
			r.Checks = append(r.Checks, c)
		}
	}
	return r
}

// Counts returns how many checks failed and how many warned.
func (r Report) Counts() (fails, warns int) {
	for _, c := range r.Checks {
		switch c.Status {
		case Fail:
			fails++
		case Warn:
			warns++
		}
	}
	return fails, warns
}

// WriteText writes the report for a person: one line per check (status,
// name, what was found), aligned, the fix indented under a check that
// failed or warned, and a last line that sums up.
func WriteText(w io.Writer, r Report) error {
	width := 0
	for _, c := range r.Checks {
		width = max(width, len(c.Name))
	}
	indent := strings.Repeat(" ", 6+width+2)
	var b strings.Builder
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "%-4s  %-*s  %s\n", c.Status, width, c.Name, oneLine(c.Found, indent))
		if c.Fix != "" && (c.Status == Fail || c.Status == Warn) {
			fmt.Fprintf(&b, "%sfix: %s\n", indent, oneLine(c.Fix, indent+"     "))
		}
	}
	fails, warns := r.Counts()
	var sum []string
	if fails > 0 {
		sum = append(sum, plural(fails, "failure"))
	}
	if warns > 0 {
		sum = append(sum, plural(warns, "warning"))
	}
	switch {
	case len(sum) == 0:
		b.WriteString("\nall good\n")
	case fails > 0:
		fmt.Fprintf(&b, "\n%s: fix the failures first\n", strings.Join(sum, ", "))
	default:
		fmt.Fprintf(&b, "\n%s: nothing failed\n", strings.Join(sum, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// oneLine keeps a multi-line text aligned: its later lines are indented.
func oneLine(s, indent string) string {
	s = strings.TrimRight(s, "\n")
	return strings.ReplaceAll(s, "\n", "\n"+indent)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// firstLine is the first non-empty line of what a program printed,
// trimmed and cut to a sane length.
func firstLine(s string) string {
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			if r := []rune(line); len(r) > 200 {
				line = string(r[:200]) + "…"
			}
			return line
		}
	}
	return ""
}
