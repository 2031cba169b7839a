package paneset

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/holder"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/panestore"
)

// maxSocketPath is what a unix socket's path may hold.
const maxSocketPath = 107

// holding prepares a holder for pane id, or says why it cannot have one
// (the pane then runs on a PTY of the daemon's own).
func (s *Set[X, J]) holding(id string) (*pane.Holding, error) {
	dir, err := holder.SocketDir(s.opts.StateDir)
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, id+".sock")
	if len(sock) > maxSocketPath {
		return nil, fmt.Errorf("the holder socket path %s is longer than %d bytes; set CORRAL_STATE_DIR to a shorter folder", sock, maxSocketPath)
	}
	s.holderLogOnce.Do(func() {
		f, err := os.OpenFile(filepath.Join(dir, "holders.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err == nil {
			s.holderLog = f
		}
		s.holders = &holder.Pool{Exe: s.opts.HolderExe, Stderr: s.holderLog}
	})
	return &pane.Holding{Pool: s.holders, Socket: sock, Secret: holder.NewSecret()}, nil
}

// prepareHold gives cfg a holder, unless the daemon cannot make one.
func (s *Set[X, J]) prepareHold(cfg *pane.Config) {
	if os.Getenv("CORRAL_NO_HOLDER") == "1" {
		return
	}
	h, err := s.holding(cfg.ID)
	if err != nil {
		s.opts.Logf("pane %s runs without a holder (it will end with the daemon): %v", cfg.ID, err)
		return
	}
	cfg.Holder = h
}

// noteHeld makes the table's row of a started pane, before it is
// registered (readers of the entry take Held without a lock).
func noteHeld[X any](e *Entry[X], cfg pane.Config, argv, env, added []string, remove bool) {
	p := e.P
	held, hpid := p.Held()
	if !held {
		return
	}
	in := p.Info()
	e.Held = panestore.NewHeld(panestore.Row{ID: cfg.ID, Name: cfg.Name, Agent: cfg.Agent, Argv: argv, Launch: cfg.Argv, Cwd: cfg.Dir,
		Env: env, Added: added, Token: e.Token, Remove: remove, Cols: in.Cols, Rows: in.Rows, Socket: cfg.Holder.Socket,
		Secret: cfg.Holder.Secret, Holder: hpid, PID: in.PID, Created: in.Started, Integration: e.Launch})
}

// rowOf is a pane's row of the table, if it has one (a pane under a
// holder whose program runs).
func rowOf[X any](e *Entry[X]) (panestore.Row, bool) {
	if e.Held == nil {
		return panestore.Row{}, false
	}
	return e.Held.Live(e.P)
}

// tableRows gives the pane table the rows of the panes ids names (nil:
// every pane) that have one. It takes s.mu, never with a pane's lock.
func (s *Set[X, J]) tableRows(ids map[string]bool) []panestore.Row {
	var es []*Entry[X]
	if ids == nil {
		es = s.Panes()
	} else {
		s.mu.Lock()
		for id := range ids {
			if e := s.panes[id]; e != nil {
				es = append(es, e)
			}
		}
		s.mu.Unlock()
	}
	var rows []panestore.Row
	for _, e := range es {
		if row, ok := rowOf(e); ok {
			rows = append(rows, row)
		}
	}
	return rows
}

// changedRows names the held panes whose state may have changed since
// the table's loop last asked: a load and a comparison a pane, no row
// built or encoded.
func (s *Set[X, J]) changedRows() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids map[string]bool
	for id, e := range s.panes {
		if e.Held == nil {
			continue
		}
		if gen := e.P.Generation(); e.tableGen.Swap(gen) != gen {
			if ids == nil {
				ids = map[string]bool{}
			}
			ids[id] = true
		}
	}
	return ids
}

// NoteSession records an agent conversation a hook report named, for a
// restore to resume.
func (s *Set[X, J]) NoteSession(e *Entry[X], agent, session string) {
	if e.Held == nil || session == "" {
		return
	}
	defer s.table.Touch(e.P.ID())
	e.Held.NoteSession(agent, session, time.Now())
}

// Touch asks the table to write pane id's row soon.
func (s *Set[X, J]) Touch(id string) { s.table.Touch(id) }

// Lost are the lost panes, as the API lists them.
func (s *Set[X, J]) Lost() []api.Pane { return s.table.LostPanes() }

// TableUnread says the pane table could not be read: which panes were
// this daemon's is not known.
func (s *Set[X, J]) TableUnread() bool { return s.table.Unread() }

// KeptByHolders adds to keep (nil: a new set) the lost panes whose
// holders still run: their programs are the holders' to end.
func (s *Set[X, J]) KeptByHolders(keep map[string]bool) map[string]bool {
	return s.table.KeptByHolders(keep)
}

// PaneIDs names the panes in the set.
func (s *Set[X, J]) PaneIDs() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := make(map[string]bool, len(s.panes))
	for id := range s.panes {
		keep[id] = true
	}
	return keep
}

// StartTable starts the loop that writes the table's changed rows.
func (s *Set[X, J]) StartTable() { s.table.Start() }

// StopTable stops it, writing what is left.
func (s *Set[X, J]) StopTable() { s.table.Stop() }
