package server

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/panestore"
	"github.com/corral-dev/corral/internal/term"
	"github.com/corral-dev/corral/internal/tmuxwatch"
)

type entry struct {
	p     unit // a *pane.Pane or a *job
	name  string
	token string // the pane's hook token, in its environment only
	// launch is what corral added to a pane's launch for its agent's
	// hooks (nil for a job).
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
	if j, ok := e.asJob(); ok {
		return j.agent, "" // its stream is its report
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

// asPane returns the entry's pane, if it is one (not a headless job).
func (e *entry) asPane() (*pane.Pane, bool) {
	p, ok := e.p.(*pane.Pane)
	return p, ok
}

// asJob returns the entry's headless job, if it is one.
func (e *entry) asJob() (*job, bool) {
	j, ok := e.p.(*job)
	return j, ok
}

// styledRows is the screen with its styles; a job's lines have none.
func (e *entry) styledRows() [][]term.Run {
	if p, ok := e.asPane(); ok {
		return p.StyledRows()
	}
	lines := e.p.Snapshot().Lines
	out := make([][]term.Run, len(lines))
	for i, l := range lines {
		out[i] = []term.Run{{Text: l}}
	}
	return out
}

// ansi is the screen as a terminal would draw it; a job's is its lines.
func (e *entry) ansi() string {
	if p, ok := e.asPane(); ok {
		return p.ANSI()
	}
	return strings.Join(e.p.Snapshot().Lines, "\r\n")
}
