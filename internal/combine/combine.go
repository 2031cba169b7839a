// Package combine is corral's one combining policy: given what the screen,
// the program itself and the process say, it decides a pane's state and
// names the signal that decided it. It is pure: no clocks, no I/O.
//
// Order of authority, first that speaks wins:
//  1. the screen shows a prompt (a blocked rule matched);
//  2. the program's own report: its OSC 7501 root record, or a hook or
//     ACP report that still stands (internal/detect weighs those two and
//     ends a hook's word when the screen outlives it);
//  3. the process (the agent exited, a shell is back in the foreground);
//  4. the other screen rules (working, idle);
//  5. nothing matched: idle. Never blocked by default.
//
// A pane whose own process has exited is exited, whatever else is said.
// docs/detection.md holds the table of every signal: level or edge, what
// renews it, what ends it, what it may overrule.
package combine

import "fmt"

// State is a pane's state.
type State string

const (
	Working State = "working"
	Blocked State = "blocked"
	Idle    State = "idle"
	Done    State = "done"
	Error   State = "error"
	Exited  State = "exited"
)

// Source names the signal that decided a state.
type Source string

const (
	SourceScreen  Source = "screen"
	SourceOSC7501 Source = "osc7501"
	SourceHook    Source = "hook"
	SourceACP     Source = "acp"
	SourceProcess Source = "process"
	SourceStream  Source = "stream" // a headless run's own stream
	SourceDefault Source = "default"
)

// Screen is the screen rules' verdict.
type Screen struct {
	State   State // Blocked, Working or Idle; "" when nothing matched
	Kind    string
	Rule    string
	Message string
}

// Report is the newest report the program made about itself.
type Report struct {
	Present bool
	Source  Source // SourceOSC7501, SourceHook or SourceACP
	State   State  // Idle, Working, Done, Blocked or Error
	Kind    string
	Message string
}

// Process is what the process table says.
type Process struct {
	// PaneExited: the pane's own process is gone.
	PaneExited bool
	ExitCode   int
	// AgentExited: the agent ran inside a shell and has exited; the shell
	// is back in the foreground.
	AgentExited bool
}

// Inputs are all the signals about one pane at one moment.
type Inputs struct {
	Screen  Screen
	Report  Report
	Process Process
}

// Decision is a pane's state and why.
type Decision struct {
	State    State
	Kind     string
	Message  string
	Source   Source
	Rule     string // the screen rule, when the screen decided
	ExitCode int    // with Exited
}

// Decide applies the policy.
func Decide(in Inputs) Decision {
	switch {
	case in.Process.PaneExited:
		return Decision{State: Exited, Source: SourceProcess, ExitCode: in.Process.ExitCode}
	case in.Screen.State == Blocked:
		msg := in.Screen.Message
		if in.Report.Present && in.Report.State == Blocked && in.Report.Message != "" {
			// The program's own words are more exact than a screen capture.
			msg = in.Report.Message
		}
		kind := in.Screen.Kind
		if kind == "" && in.Report.Present && in.Report.State == Blocked {
			kind = in.Report.Kind
		}
		return Decision{State: Blocked, Kind: kind, Message: msg, Source: SourceScreen, Rule: in.Screen.Rule}
	case in.Report.Present:
		d := Decision{State: in.Report.State, Message: in.Report.Message, Source: in.Report.Source}
		if d.State == Blocked {
			d.Kind = in.Report.Kind
		}
		return d
	case in.Process.AgentExited:
		return Decision{State: Idle, Source: SourceProcess}
	case in.Screen.State != "":
		return Decision{State: in.Screen.State, Message: in.Screen.Message, Source: SourceScreen, Rule: in.Screen.Rule}
	}
	return Decision{State: Idle, Source: SourceDefault}
}

// Changed reports whether moving from a to b is a change worth an event:
// a new state or kind, or a different prompt while blocked.
func Changed(a, b Decision) bool {
	if a.State != b.State || a.Kind != b.Kind {
		return true
	}
	return a.State == Blocked && a.Message != b.Message
}

// Background is the message of a turn that ended with n background tasks
// (shells, sub-agents) still running: the turn is done, its work is not.
func Background(n int) string {
	if n == 1 {
		return "done; 1 background task still running"
	}
	return fmt.Sprintf("done; %d background tasks still running", n)
}
