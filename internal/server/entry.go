package server

import (
	"sync/atomic"
	"time"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/panestore"
	"github.com/corral-dev/corral/internal/tmuxwatch"
)

// entry is a pane in the daemon's table: the pane and what the daemon
// keeps beside it. A headless job is not one (see job.go).
type entry struct {
	p     *pane.Pane
	name  string
	token string // the pane's hook token, in its environment only
	// launch is what corral added to the pane's launch for its agent's
	// hooks.
	launch *agents.Launch
	// hooksSeen counts the hook reports this pane's token carried.
	hooksSeen atomic.Int64
	// refusal is what the agent said on its screen when it refused the
	// integration ("" while it has not).
	refusal atomic.Pointer[string]
	// refused counts hook reports with a wrong token naming this pane.
	refused atomic.Int64
	// held is the pane table's row of a pane under a holder (nil when
	// none).
	held *panestore.Held
	// tableGen is the pane's Generation when its row was last given to
	// the table's loop (changedRows).
	tableGen atomic.Uint64
	// approve decides the pane's permission requests (nil: none does);
	// worktree is the git worktree corral made for it.
	approve  atomic.Pointer[approver]
	worktree atomic.Pointer[worktree]
	// question holds the choices of the question the agent's hook last
	// asked, until the agent goes on.
	question atomic.Pointer[[]string]
	// tmux places a pane of a watched tmux server (nil for others).
	tmux *tmuxwatch.Pane
}

// integration says which agent's hooks are in force for the pane, and
// when its recognised agent has none, why.
func (e *entry) integration(agent string) (string, string) {
	if e.tmux != nil {
		// An agent started outside corral: its hooks are the user's
		// opt-in (corral integrate claude-code --global).
		switch {
		case e.hooksSeen.Load() > 0:
			return agent, ""
		case agent == "claude-code":
			return "", "started outside corral: its hooks reach corral after corral integrate claude-code --global (then restart it in its pane)"
		}
		return "", ""
	}
	if e.launch == nil {
		return "", ""
	}
	in, problem := e.launch.Status(agent)
	if in != "" && e.hooksSeen.Load() == 0 {
		if r := e.refusal.Load(); r != nil && in == "gemini" {
			return "", *r
		}
		if d := e.launch.Doubt[in]; d != "" {
			return "", d
		}
	}
	return in, problem
}

// watchIntegration reads the pane's screen while its agent may still
// refuse corral's integration there (Gemini CLI prints a warning and runs
// without the hooks), until a hook report proves it took them.
func (e *entry) watchIntegration(p *pane.Pane) {
	t := time.NewTicker(300 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.Done():
			return
		case <-t.C:
		}
		if e.hooksSeen.Load() > 0 {
			return
		}
		if msg := agents.ScreenProblem("gemini", p.Snapshot().Lines); msg != "" {
			e.refusal.Store(&msg)
			return
		}
	}
}
