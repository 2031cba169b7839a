package panestore

import (
	"time"
)

// Snapshot is the table as the daemon knows it now: every live pane's row
// and the lost ones.
func (t *Store) Snapshot() File {
	var f File
	if t.rows != nil {
		f.Panes = t.rows(nil)
	}
	t.mu.Lock()
	f.Lost = append(f.Lost, t.lost...)
	t.mu.Unlock()
	return f
}

// Save writes every row that changed.
func (t *Store) Save() {
	if err := t.sync(t.Snapshot(), nil); err != nil {
		t.logf("%v", err)
	}
}

// SaveRows writes the rows of ids (a row whose pane is gone or exited is
// deleted): the cost of a change is its own, whatever the number of panes.
func (t *Store) SaveRows(ids map[string]bool) {
	var f File
	if t.rows != nil {
		f.Panes = t.rows(ids)
	}
	t.mu.Lock()
	for _, row := range t.lost {
		if ids[row.ID] {
			f.Lost = append(f.Lost, row)
		}
	}
	t.mu.Unlock()
	if err := t.sync(f, ids); err != nil {
		t.logf("%v", err)
	}
}

// WatchChanges gives the loop, before Start, what says which panes'
// rows may have changed since it last asked (OSC 7501 records, a size:
// what no Touch tells): every tableEvery it writes those rows alone, and
// compares the whole table only every wholeEvery. Without it, the whole
// table is compared every tableEvery (each row encoded: O(panes) a
// second while nothing happens).
func (t *Store) WatchChanges(changed func() map[string]bool) { t.changed = changed }

// Start runs the loop that writes the rows a state change or a hook asked
// for (Touch) soon after, and every tableEvery whatever else changed (OSC
// 7501 records, a size), until Stop.
func (t *Store) Start() {
	t.started.Store(true)
	go t.loop()
}

func (t *Store) loop() {
	defer close(t.loopDone)
	tick := time.NewTicker(t.every)
	defer tick.Stop()
	wholeAt := time.Now()
	for {
		select {
		case <-t.stop:
			return
		case <-t.dirty:
			select {
			case <-t.stop:
				return
			case <-time.After(tableDelay):
			}
			if ids := t.takeDirty(); ids != nil {
				t.SaveRows(ids)
				continue
			}
		case <-tick.C:
			if t.changed != nil && time.Since(wholeAt) < wholeEvery {
				if ids := t.changed(); len(ids) > 0 {
					t.SaveRows(ids)
				}
				continue
			}
		}
		wholeAt = time.Now()
		t.Save()
	}
}

// Stop ends the loop and writes the table a last time, whole: a daemon
// that hands over writes nothing after the next one has started.
func (t *Store) Stop() {
	t.stopOnce.Do(func() {
		close(t.stop)
		if t.started.Load() {
			<-t.loopDone
		}
	})
	if err := t.write(t.Snapshot()); err != nil {
		t.logf("%v", err)
	}
}

// Unread says a table was there and could not be read: the holders it
// named, and so which panes are this daemon's, are not known.
func (t *Store) Unread() bool { return t.unread }

// Lost is a copy of the lost panes' rows.
func (t *Store) Lost() []Row {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Row(nil), t.lost...)
}

// AddLost keeps row as lost, for why.
func (t *Store) AddLost(row Row, why string) {
	row.Why = why
	t.mu.Lock()
	t.lost = append(t.lost, row)
	t.mu.Unlock()
}

// TakeLost removes from the lost panes those ids names (by id or name;
// all when ids is empty) and returns them; when an id names none, nothing
// is taken and missing names them.
func (t *Store) TakeLost(ids []string) (picked []Row, missing []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	picked, others, missing := pickLost(t.lost, ids)
	if len(missing) > 0 {
		return nil, missing
	}
	t.lost = others
	return picked, nil
}

// ReturnLost puts rows taken by TakeLost back, first.
func (t *Store) ReturnLost(rows []Row) {
	t.mu.Lock()
	t.lost = append(rows, t.lost...)
	t.mu.Unlock()
}

// KeptByHolders adds to keep (nil: a new set) the lost panes whose holders
// still run though the daemon does not hold them (the holder refused, or
// was slow): their programs are the holders' to end.
func (t *Store) KeptByHolders(keep map[string]bool) map[string]bool {
	if keep == nil {
		keep = map[string]bool{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, row := range t.lost {
		if HolderAlive(row.Holder) {
			keep[row.ID] = true
		}
	}
	return keep
}

// NoteSession records on row an agent conversation a hook report named,
// for a restore to resume; it keeps the newest eight.
func (row *Row) NoteSession(agent, session string, at time.Time) {
	ss := row.Sessions
	if n := len(ss); n > 0 && ss[n-1].ID == session && ss[n-1].Agent == agent {
		return
	}
	ss = append(ss, Session{Agent: agent, ID: session, At: at})
	if len(ss) > 8 {
		ss = ss[len(ss)-8:]
	}
	row.Sessions = ss
}
