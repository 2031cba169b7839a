package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/panestore"
)

// Restored is what corral restore did with one lost pane.
type Restored struct {
	ID      string   `json:"id"` // the pane's id now (its old one when free)
	Was     string   `json:"was"`
	Name    string   `json:"name,omitempty"`
	Cwd     string   `json:"cwd"`
	Command []string `json:"command"`
	// Resumed names the conversation the agent resumes ("" when the pane
	// started fresh); Note says why it did not, or what failed.
	Resumed string `json:"resumed,omitempty"`
	Note    string `json:"note,omitempty"`
	Error   string `json:"error,omitempty"`
}

// handleRestore starts again, in their folders with their names and
// sizes, the panes whose holders were gone when the daemon started,
// resuming their agents' conversations where the agent allows it.
func (s *Server) handleRestore(w http.ResponseWriter, r *http.Request) {
	var req struct {
		// Forget drops the lost panes instead of starting them.
		Forget bool `json:"forget"`
		// IDs are the lost panes to restore or forget, by id or name
		// (none: every lost pane).
		IDs []string `json:"ids,omitempty"`
	}
	if !decode(w, r, &req) {
		return
	}
	lost, missing := s.table.TakeLost(req.IDs)
	if len(missing) > 0 {
		fail(w, http.StatusNotFound, "not_found", fmt.Errorf("no lost pane named %s; corral ls shows the lost ones (state lost)", strings.Join(missing, ", ")))
		return
	}
	out := []Restored{}
	if req.Forget {
		for _, row := range lost {
			out = append(out, Restored{Was: row.ID, Name: row.Name, Cwd: row.Cwd, Command: row.Argv, Note: "forgotten"})
		}
		s.table.Save()
		reply(w, out)
		return
	}
	var keep []panestore.Row
	for _, row := range lost {
		res := Restored{Was: row.ID, Name: row.Name, Cwd: row.Cwd}
		// Its holder did not let this daemon in, or is gone: starting the
		// program again while it runs would run it twice.
		if why := panestore.LetGo(row); why != "" {
			res.Error = why
			keep = append(keep, row)
			out = append(out, res)
			continue
		}
		argv, session, why := panestore.ResumeArgv(row)
		res.Command, res.Resumed, res.Note = argv, session, why
		// The table keeps the user's command, not the resumed one: the
		// next restore resumes the newest conversation the agent reports.
		o := startOpts{remove: row.Remove, base: row.Argv, sessions: row.Sessions, approve: s.policyOf(row), worktree: worktreeOf(row)}
		p, err := s.start(pane.Config{ID: row.ID, Name: row.Name, Argv: argv, Dir: row.Cwd, Env: row.Env, Cols: row.Cols, Rows: row.Rows,
			Agent: row.Agent}, o)
		if err != nil {
			res.Error = err.Error()
			keep = append(keep, row)
		} else {
			res.ID = p.ID()
			if why != "" {
				s.opts.Logf("restore: pane %s (%s): %s", res.ID, row.Name, why)
			}
		}
		out = append(out, res)
	}
	s.table.ReturnLost(keep)
	s.table.Save()
	reply(w, out)
}

// LostMessage is what a lost pane says in listings.
const LostMessage = panestore.LostMessage

// StateLost is the state of a pane whose program was lost; only listings
// show it (no event is in it).
const StateLost = panestore.StateLost
