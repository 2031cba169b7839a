// Package api holds the shapes of corral's HTTP/JSON API and the CLI's
// --json output. They are a public interface: change them only by adding
// fields, and say so in the README.
package api

import (
	"encoding/json"
	"time"

	"github.com/corral-dev/corral/internal/buildinfo"
	"github.com/corral-dev/corral/internal/eventlog"
)

// Version is the API version in every path: /v1/….
const Version = "v1"

// PaneRow is what GET /v1/panes?view=ls answers of each pane: the
// columns corral ls prints, under Pane's names (an older daemon answers
// whole panes, which decode the same).
type PaneRow struct {
	ID               string `json:"id"`
	Name             string `json:"name"`
	Agent            string `json:"agent"`
	State            string `json:"state"`
	Kind             string `json:"kind"`
	Message          string `json:"message"`
	Since            string `json:"since"`
	Source           string `json:"source"`
	ExitCode         *int   `json:"exit_code"`
	IntegrationError string `json:"integration_error"`
}

// Row is the pane's PaneRow.
func (p Pane) Row() PaneRow {
	return PaneRow{ID: p.ID, Name: p.Name, Agent: p.Agent, State: p.State, Kind: p.Kind, Message: p.Message, Since: p.Since,
		Source: p.Source, ExitCode: p.ExitCode, IntegrationError: p.IntegrationError}
}

// Pane is one pane in `corral ls --json` and GET /v1/panes.
type Pane struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Agent      string   `json:"agent"`
	State      string   `json:"state"`
	Kind       string   `json:"kind"`
	Message    string   `json:"message"`
	Progress   *int     `json:"progress"` // null when none
	Since      string   `json:"since"`    // RFC 3339 with milliseconds
	Source     string   `json:"source"`
	Rule       string   `json:"rule"`
	PID        int      `json:"pid"`
	ExitCode   *int     `json:"exit_code"` // null while running
	Cwd        string   `json:"cwd"`
	Cols       int      `json:"cols"`
	Rows       int      `json:"rows"`
	Command    []string `json:"command"`
	Foreground string   `json:"foreground"`
	Records    []Record `json:"records"`
	// Integration is the agent whose hooks corral added ("" for none).
	Integration string `json:"integration"`
	// IntegrationError says why the pane's agent, one corral integrates
	// with, has no hooks: they could not be added to its launch, or it
	// refused them ("" when it has them, or is no such agent).
	IntegrationError string `json:"integration_error"`
	// HooksRefused counts hook reports naming this pane with a wrong token.
	HooksRefused int64 `json:"hooks_refused"`
	// HooksIgnored counts hook reports that decided nothing: unknown
	// events, payloads of the wrong shape, another conversation's.
	HooksIgnored int `json:"hooks_ignored"`
	// SessionID is a headless job's agent session, once known.
	SessionID string `json:"session_id,omitempty"`
	// Fleet is the fleet job a headless job runs, if it runs one.
	Fleet *FleetJob `json:"fleet,omitempty"`
	// Policy is the policy file deciding the pane's permission requests
	// ("" for none); Approval is its latest decision.
	Policy   string    `json:"policy,omitempty"`
	Approval *Approval `json:"approval,omitempty"`
	// Worktree is the git worktree corral made for the pane.
	Worktree *Worktree `json:"worktree,omitempty"`
	// Host is the fleet host the pane runs on, in fleet views (the
	// boards of a daemon in a fleet); Unreachable marks a pane of a host
	// that stopped answering (its last known state).
	Host        string `json:"host,omitempty"`
	Unreachable bool   `json:"unreachable,omitempty"`
	// ScreenAt is when the screen a board shows of another host's pane
	// was fetched (RFC 3339; "" for this daemon's panes, always current).
	ScreenAt string `json:"screen_at,omitempty"`
	// Backend is where the pane's program runs: "pty" (a terminal of the
	// daemon's own), "held" (a holder process's, which outlives the
	// daemon), "tmux" (a tmux pane corral watches), "headless" (a job).
	Backend string `json:"backend,omitempty"`
	// Tmux places a watched tmux pane.
	Tmux *TmuxPane `json:"tmux,omitempty"`
	// Prompt is what a blocked pane's prompt takes now, the answers
	// corral answer types into it; absent when the pane is not blocked
	// or no rule recognises its prompt (then only send or attach help).
	Prompt *Prompt `json:"prompt,omitempty"`
}

// Prompt is what a blocked pane's prompt takes.
type Prompt struct {
	// Rule is the rule that reads the prompt ("" for the manifest's
	// answers alone).
	Rule string `json:"rule"`
	// Answers are the built-in answers it takes (yes, always, no,
	// cancel), Options whether it takes an option number.
	Answers []string `json:"answers"`
	Options bool     `json:"options"`
	// Choices are the prompt's own answers, which its rule declares
	// (Claude Code's auto-mode notice: accept-edits).
	Choices []Choice `json:"choices"`
}

// Choice is a prompt's own answer: the name corral answer takes, and what
// it does.
type Choice struct {
	Name  string `json:"name"`
	Label string `json:"label"`
}

// TmuxPane is where a watched tmux pane is.
type TmuxPane struct {
	Socket string `json:"socket"` // the tmux server's socket
	Pane   string `json:"pane"`   // tmux's pane id, %N
	Target string `json:"target"` // SESSION:WINDOW.PANE, as it is now
}

// TmuxRequest is POST /v1/tmux/watch and /v1/tmux/unwatch: a tmux server
// as tmux's -L and -S name it (both empty: the user's default server).
type TmuxRequest struct {
	Name   string `json:"name,omitempty"`
	Socket string `json:"socket,omitempty"`
}

// TmuxServer is a watched tmux server (GET /v1/tmux lists them).
type TmuxServer struct {
	Name     string `json:"name"`   // -L NAME ("" for -S or the default)
	Socket   string `json:"socket"` // the server's socket path
	Running  bool   `json:"running"`
	Since    string `json:"since"` // when running last changed
	Sessions int    `json:"sessions"`
	Panes    int    `json:"panes"`
	// Skipped counts tmux panes that could not be made corral panes;
	// Malformed, control-mode lines that did not parse; Pauses, times
	// tmux paused a pane's output because corral fell behind (redrawn).
	Skipped   int64  `json:"skipped"`
	Malformed int64  `json:"malformed"`
	Pauses    int64  `json:"pauses"`
	Version   string `json:"version"`
	Error     string `json:"error"`
}

// Rules is GET /v1/rules: the manifests the daemon has in force, and the
// problems of its newest load.
type Rules struct {
	Manifests []Manifest `json:"manifests"`
	Problems  []string   `json:"problems"`
}

// Manifest is one agent's rules in force.
type Manifest struct {
	Name      string   `json:"name"`
	Rules     int      `json:"rules"`
	Processes []string `json:"processes"`
	Source    string   `json:"source"`
}

// HookRequest is what `corral hook` posts: POST /v1/hook.
type HookRequest struct {
	Pane    string          `json:"pane"`
	Token   string          `json:"token"`
	Agent   string          `json:"agent"`
	Payload json.RawMessage `json:"payload"`
	// An agent started outside corral in tmux has no pane and token of
	// corral's: its hook names its tmux pane instead ($TMUX's socket and
	// $TMUX_PANE), which must be a watched one.
	TmuxSocket string `json:"tmux_socket,omitempty"`
	TmuxPane   string `json:"tmux_pane,omitempty"`
}

// Status is GET /v1/status: the daemon itself.
type Status struct {
	Socket       string         `json:"socket"`
	PID          int            `json:"pid"`
	Panes        int            `json:"panes"`
	HooksRefused int64          `json:"hooks_refused"`
	Build        buildinfo.Info `json:"build"`
	Started      string         `json:"started"` // RFC 3339
}

// Record is an OSC 7501 record a pane's program reported.
type Record struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Kind     string `json:"kind"`
	Progress *int   `json:"progress"`
	App      string `json:"app"`
	Title    string `json:"title"`
	Message  string `json:"message"`
	Updated  string `json:"updated"`
}

// RunRequest starts a pane: POST /v1/panes.
type RunRequest struct {
	Name    string   `json:"name"`
	Command []string `json:"command"`
	Cwd     string   `json:"cwd"`
	Cols    int      `json:"cols"`
	Rows    int      `json:"rows"`
	Agent   string   `json:"agent"`
	Env     []string `json:"env"`
	// Remove removes the pane when its program exits (corral run --rm).
	Remove bool `json:"remove,omitempty"`
	// Policy is a policy file's text (PolicySource: its path) deciding the
	// pane's permission requests; NoPolicy leaves config.toml's out.
	Policy       string `json:"policy,omitempty"`
	PolicySource string `json:"policy_source,omitempty"`
	NoPolicy     bool   `json:"no_policy,omitempty"`
	// Worktree runs the pane in a new git worktree of the repository at
	// Cwd, on Branch (new or existing; "" names one after the pane).
	Worktree bool   `json:"worktree,omitempty"`
	Branch   string `json:"branch,omitempty"`
}

// Screen is GET /v1/panes/{id}/screen.
type Screen struct {
	Pane    string   `json:"pane"`
	Cols    int      `json:"cols"`
	Rows    int      `json:"rows"`
	Title   string   `json:"title"`
	Lines   []string `json:"lines"`
	CursorX int      `json:"cursor_x"`
	CursorY int      `json:"cursor_y"`
	// ANSI is the screen with colours (?ansi=1 only).
	ANSI string `json:"ansi,omitempty"`
}

// SendRequest types text: POST /v1/panes/{id}/send.
type SendRequest struct {
	Text  string `json:"text"`
	Enter bool   `json:"enter"`
	// Force skips the blocked guard.
	Force bool `json:"force"`
	// ReadyMS bounds the wait for a pane whose agent is starting to be
	// ready for input (0: DefaultReadyWait); text is typed only then.
	ReadyMS int64 `json:"ready_ms,omitempty"`
}

// DefaultReadyWait is how long a send waits for a starting agent.
const DefaultReadyWait = 60 * time.Second

// AnswerRequest answers a prompt: POST /v1/panes/{id}/answer.
type AnswerRequest struct {
	Choice string `json:"choice"`
}

// AnswerResult says what was typed.
type AnswerResult struct {
	Pane string `json:"pane"`
	Keys string `json:"keys"`
}

// KillRequest signals a pane: POST /v1/panes/{id}/kill.
type KillRequest struct {
	// Signal is sent alone when given; empty: TERM, then KILL if the
	// program has not ended after Grace (as docker stop does).
	Signal string `json:"signal"`
	// Grace is a duration ("3s"; empty: the default, at most MaxKillGrace).
	Grace string `json:"grace,omitempty"`
}

// Bounds of KillRequest.Grace: the answer comes within the CLI's 10 s.
const (
	DefaultKillGrace = 3 * time.Second
	MaxKillGrace     = 7 * time.Second
)

// Error is every error response's body.
type Error struct {
	Error string `json:"error"`
	// Code is machine-readable (not_found, blocked, bad_request, internal,
	// ...): docs/api.md lists every code with its HTTP status.
	Code string `json:"code"`
}

// StreamEnd is the last line of an event stream (GET /v1/events, GET
// /v1/fleet/events) that the daemon ended, saying why: the log could not
// be read, the stream fell behind, the daemon is shutting down.
type StreamEnd struct {
	End string `json:"end"`
}

// Event is a state change (the event stream's and `corral events`' lines).
type Event = eventlog.Event

// AttachControl is a text message from an attached terminal.
type AttachControl struct {
	Cols int `json:"cols"`
	Rows int `json:"rows"`
}

// BoardRequest starts the web board: POST /v1/board.
type BoardRequest struct {
	Addr      string `json:"addr"`
	ListenAny bool   `json:"listen_any"`
}

// BoardResult is the web board's one-time sign-in address: URL, and in
// URLs the same sign-in at every address the board answers at (loopback
// first). The code in them is good once, for board.CodeTTL.
type BoardResult struct {
	URL     string   `json:"url"`
	URLs    []string `json:"urls,omitempty"`
	Started bool     `json:"started"`
}

// ExecRequest starts a headless job: POST /v1/jobs.
type ExecRequest struct {
	Name      string   `json:"name"`
	Agent     string   `json:"agent"` // a headless agent (corral agents), auto or acp
	Command   []string `json:"command"`
	Cwd       string   `json:"cwd"`
	Env       []string `json:"env"`
	TimeoutMS int64    `json:"timeout_ms"`
	StallMS   int64    `json:"stall_ms"`
	// Policy is a policy file's text; PolicySource names it in errors.
	Policy       string `json:"policy"`
	PolicySource string `json:"policy_source"`
	// Prompt overrides the prompt after -p; NoRelay runs Claude without
	// the permission relay.
	Prompt  string `json:"prompt"`
	NoRelay bool   `json:"no_relay"`
	// Mode is "pipe" (default) or "pty-lite".
	Mode string `json:"mode"`

	// CallerEnv is the caller's whole environment: the job's starts from
	// it (Env added), not from the daemon's. Absent, the daemon's is used.
	CallerEnv []string `json:"caller_env,omitempty"`

	// Fleet is the fleet job this job runs (set by the host's fleet
	// worker, never by a caller): kept with the job, so that the fleet
	// job is tied to it again after a daemon restart, never run twice.
	Fleet *FleetJob `json:"fleet,omitempty"`
}

// FellBehind begins the diagnostic line a job's stream (GET
// /v1/jobs/{id}/stream) adds when it missed events: a line that is none of
// the job's events.
const FellBehind = "corral: this stream fell"

// FleetJob names the fleet job a host's job runs: its id, the host that
// queued it, and the attempt this host took.
type FleetJob struct {
	ID      string `json:"id"`
	From    string `json:"from"`
	Attempt int    `json:"attempt"`
}

// MaxEventSockets is how many event WebSockets the daemon serves at once.
const MaxEventSockets = 128
