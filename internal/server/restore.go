package server

import (
	"fmt"
	"strings"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/httpapi"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/panestore"
)

// Restored is api.Restored, named here for the commands that still use
// it from the daemon's package.
type Restored = api.Restored

// Restore starts again, in their folders with their names and sizes,
// the panes whose holders were gone when the daemon started, resuming
// their agents' conversations where the agent allows it.
func (s *Server) Restore(req api.RestoreRequest) ([]api.Restored, error) {
	lost, missing := s.table.TakeLost(req.IDs)
	if len(missing) > 0 {
		return nil, httpapi.NotFound(fmt.Errorf("no lost pane named %s; corral ls shows the lost ones (state lost)", strings.Join(missing, ", ")))
	}
	out := []api.Restored{}
	if req.Forget {
		for _, row := range lost {
			out = append(out, api.Restored{Was: row.ID, Name: row.Name, Cwd: row.Cwd, Command: row.Argv, Note: "forgotten"})
		}
		s.table.Save()
		return out, nil
	}
	var keep []panestore.Row
	for _, row := range lost {
		res := api.Restored{Was: row.ID, Name: row.Name, Cwd: row.Cwd}
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
	return out, nil
}

// LostMessage is what a lost pane says in listings.
const LostMessage = panestore.LostMessage

// StateLost is the state of a pane whose program was lost; only listings
// show it (no event is in it).
const StateLost = panestore.StateLost
