package paneset

import (
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/panestore"
)

// Restore starts again, in their folders with their names and sizes,
// the lost panes ids names (none: all of them), resuming their agents'
// conversations where the agent allows it; with forget, it forgets them
// instead. missing are the ids that name no lost pane: then nothing is
// done.
func (s *Set[X, J]) Restore(ids []string, forget bool) (out []api.Restored, missing []string) {
	lost, missing := s.table.TakeLost(ids)
	if len(missing) > 0 {
		return nil, missing
	}
	out = []api.Restored{}
	if forget {
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
		o := StartOptions[X]{Remove: row.Remove, Base: row.Argv, Sessions: row.Sessions}
		if s.opts.FromRow != nil {
			o.Init = s.opts.FromRow(row)
		}
		p, err := s.Start(pane.Config{ID: row.ID, Name: row.Name, Argv: argv, Dir: row.Cwd, Env: row.Env, Cols: row.Cols, Rows: row.Rows,
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
