package paneset

import (
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
	"time"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/panestore"
	"github.com/corral-dev/corral/internal/tmuxwatch"
)

// Entry is a pane in the daemon's table: the pane and what the daemon
// keeps beside it; Ext is the server's part (its policy, its worktree).
// A headless job is not one.
type Entry[X any] struct {
	P     *pane.Pane
	Name  string
	Token string // the pane's hook token, in its environment only
	// Launch is what corral added to the pane's launch for its agent's
	// hooks.
	Launch *agents.Launch
	// HooksSeen counts the hook reports this pane's token carried.
	HooksSeen atomic.Int64
	// refusal is what the agent said on its screen when it refused the
	// integration (nil while it has not).
	refusal atomic.Pointer[string]
	// Refused counts hook reports with a wrong token naming this pane.
	Refused atomic.Int64
	// Held is the pane table's row of a pane under a holder (nil when
	// none). It is set before the entry is registered: readers take it
	// without a lock.
	Held *panestore.Held
	// tableGen is the pane's Generation when its row was last given to
	// the table's loop (changedRows).
	tableGen atomic.Uint64
	// Tmux places a pane of a watched tmux server (nil for others).
	Tmux *tmuxwatch.Pane
	// Ext is what the server keeps beside the pane.
	Ext X
}

// newToken returns a pane's secret for its hooks.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Integration says which agent's hooks are in force for the pane, and
// when its recognised agent has none, why.
func (e *Entry[X]) Integration(agent string) (string, string) {
	if e.Tmux != nil {
		// An agent started outside corral: its hooks are the user's
		// opt-in (corral integrate claude-code --global).
		switch {
		case e.HooksSeen.Load() > 0:
			return agent, ""
		case agent == "claude-code":
			return "", "started outside corral: its hooks reach corral after corral integrate claude-code --global (then restart it in its pane)"
		}
		return "", ""
	}
	if e.Launch == nil {
		return "", ""
	}
	in, problem := e.Launch.Status(agent)
	if in != "" && e.HooksSeen.Load() == 0 {
		if r := e.refusal.Load(); r != nil && in == "gemini" {
			return "", *r
		}
		if d := e.Launch.Doubt[in]; d != "" {
			return "", d
		}
	}
	return in, problem
}

// watchIntegration reads the pane's screen while its agent may still
// refuse corral's integration there (Gemini CLI prints a warning and runs
// without the hooks), until a hook report proves it took them.
func (e *Entry[X]) watchIntegration() {
	p := e.P
	t := time.NewTicker(300 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.Done():
			return
		case <-t.C:
		}
		if e.HooksSeen.Load() > 0 {
			return
		}
		if msg := agents.ScreenProblem("gemini", p.Snapshot().Lines); msg != "" {
			e.refusal.Store(&msg)
			return
		}
	}
}
