package paneset

import (
	"os"
	"sort"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/panestore"
)

// adoptAtOnce bounds the panes being adopted at the same time.
const adoptAtOnce = 64

// Adopt takes again the panes of the table whose holders still run; the
// others are kept as lost, for Restore. lastLogged gives the newest logged
// decision of every pane (read only when the table has rows).
func (s *Set[X, J]) Adopt(lastLogged func() map[string]panestore.Logged) {
	start := time.Now()
	rows := s.table.Open()
	if len(rows) == 0 {
		s.table.Save() // the whole table, the journal folded in
		return
	}
	last := lastLogged()
	type result struct {
		row panestore.Row
		e   *Entry[X]
		err error
	}
	results := make([]result, len(rows))
	var wg sync.WaitGroup
	// A few at a time: each connection has adoptWait to be answered, and
	// a thousand at once on holder processes of one thread each would
	// leave the last ones unanswered, their panes taken for lost.
	slots := make(chan struct{}, adoptAtOnce)
	for i, row := range rows {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			e, err := s.adopt(row, last[row.ID])
			results[i] = result{row, e, err}
		}()
	}
	wg.Wait()
	sort.SliceStable(results, func(i, j int) bool { return results[i].row.Created.Before(results[j].row.Created) })
	adopted := 0
	for _, r := range results {
		if r.err != nil {
			s.opts.Logf("pane %s (%s) not adopted: %v", r.row.ID, r.row.Name, r.err)
			s.table.AddLost(r.row, r.err.Error())
			continue
		}
		s.mu.Lock()
		if s.roster.Has(r.row.ID) || s.roster.Taken(r.row.Name) != nil {
			s.mu.Unlock()
			// Let go, never end: the program is the user's work.
			r.e.P.Detach()
			why := "its id or name is taken by another pane"
			s.opts.Logf("pane %s (%s) not adopted: %s", r.row.ID, r.row.Name, why)
			s.table.AddLost(r.row, why)
			continue
		}
		s.panes[r.row.ID] = r.e
		s.roster.Add(r.row.ID, r.e.Name)
		s.mu.Unlock()
		adopted++
		if r.row.Remove && r.e.P.Info().Exited {
			// A --rm pane whose program ended while no daemon ran: its
			// OnExit came before it was registered here.
			s.opts.Logf("pane %s (%s): its program exited while no daemon ran; removed (--rm)", r.row.ID, r.row.Name)
			go func() { _ = s.Remove(r.row.ID, false) }()
		}
		if r.e.Launch != nil && r.e.Launch.Watch {
			go r.e.watchIntegration()
		}
	}
	s.opts.Logf("re-adopted %d of %d panes in %v", adopted, len(rows), time.Since(start).Round(time.Millisecond))
	s.table.Save()
}

// adopt reconnects to one pane's holder and makes it a pane again.
func (s *Set[X, J]) adopt(row panestore.Row, ev panestore.Logged) (*Entry[X], error) {
	row.Why = ""
	hc, err := s.table.Dial(row)
	if err != nil {
		return nil, err
	}
	last, since := panestore.LastKnown(row, ev)
	var hooks detect.Standing
	if row.Hooks != nil {
		hooks = *row.Hooks
	}
	name := row.Name
	id := row.ID
	files := []string(nil)
	if row.Integration != nil {
		files = row.Integration.Files
	}
	cfg := pane.Config{ID: id, Name: name, Argv: row.Launch, Dir: row.Cwd, Env: row.Added, Cols: row.Cols, Rows: row.Rows,
		Rules: s.rules(), Agent: row.Agent, Seen: row.Seen}
	cfg.OnChange = s.OnChange(name)
	remove := row.Remove
	cfg.OnExit = func(p *pane.Pane) {
		for _, f := range files {
			_ = os.Remove(f)
		}
		if msg := p.Lost(); msg != "" {
			s.opts.Logf("pane %s: %s", p.ID(), msg)
		}
		s.table.Touch(id)
		if remove {
			go func() { _ = s.Remove(id, false) }()
		}
	}
	p, err := pane.Adopt(cfg, hc, pane.Adopted{Started: row.Created, Records: row.Records, Last: last,
		Since: since, Hooks: hooks})
	if err != nil {
		hc.Close()
		return nil, err
	}
	if _, hpid := p.Held(); hpid != row.Holder && row.Holder != 0 {
		s.opts.Logf("pane %s: its holder is pid %d (the table said %d)", id, hpid, row.Holder)
	}
	row.Holder, row.PID = hc.Welcome.HolderPID, hc.Welcome.ProgramPID
	e := &Entry[X]{P: p, Name: name, Token: row.Token, Launch: row.Integration, Held: panestore.NewHeld(row)}
	if s.opts.FromRow != nil {
		s.opts.FromRow(row)(e)
	}
	if e.Launch == nil {
		e.Launch = &agents.Launch{Argv: row.Launch, Missing: map[string]string{}}
	}
	return e, nil
}
