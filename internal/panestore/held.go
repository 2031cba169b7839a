package panestore

import (
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/pane"
)

// Held is the row of a live pane under a holder: what its start (or its
// adoption) gave it, and the conversations its hooks named since. The
// server keeps one per such pane; the rest of a row is read from the pane
// when the row is written (Live).
type Held struct {
	mu  sync.Mutex // guards row.Sessions, noted by hook reports while the loop reads the row
	row Row
}

// NewHeld is the row of a pane that starts or is adopted.
func NewHeld(row Row) *Held { return &Held{row: row} }

// Keep sets what the pane carries over from a row it was started again
// from (corral restore), and its policy and worktree.
func (h *Held) Keep(sessions []Session, policy *Policy, wt *Worktree) {
	h.mu.Lock()
	h.row.Sessions, h.row.Policy, h.row.Worktree = sessions, policy, wt
	h.mu.Unlock()
}

// NoteSession records an agent conversation a hook report named, for a
// restore to resume.
func (h *Held) NoteSession(agent, session string, at time.Time) {
	h.mu.Lock()
	h.row.NoteSession(agent, session, at)
	h.mu.Unlock()
}

// Live is the row with p's state now, or false when p's program has
// exited (the row is then deleted).
func (h *Held) Live(p *pane.Pane) (Row, bool) {
	in := p.Info()
	if in.Exited {
		return Row{}, false
	}
	h.mu.Lock()
	row := h.row
	row.Sessions = append([]Session(nil), row.Sessions...)
	h.mu.Unlock()
	row.Cols, row.Rows, row.Seen, row.Records = in.Cols, in.Rows, in.Agent, in.Records
	row.State, row.Kind, row.Message = string(in.Decision.State), in.Decision.Kind, in.Decision.Message
	row.Since, row.Source, row.Rule = in.Since, string(in.Decision.Source), in.Decision.Rule
	if st := p.Standing(); st != (detect.Standing{}) {
		row.Hooks = &st
	}
	return row, true
}
