package panestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/safefile"
	"github.com/corral-dev/corral/internal/status"
)

// The pane table: what the daemon knows of every pane whose program runs
// under a holder, kept in the state folder so that the next daemon can
// re-adopt them (same id, name, agent, folder, size, integration tokens,
// OSC 7501 records) and, after a reboot, start them again.
//
// A change costs what it changes, not the table: each changed row is a
// line appended to a journal (panes.journal, fsync'd), and the journal is
// folded into the table file (panes.json, written whole: a temporary
// file, fsync, rename) once it outgrows it, and when the daemon stops.
// The next daemon reads the table, then the journal over it.
const (
	tableName    = "panes.json"
	journalName  = "panes.journal"
	tableVersion = 1
	// tableMax bounds the file read back; journalMax the journal.
	tableMax   = 16 << 20
	journalMax = 64 << 20
	// compactAt: the journal is folded into the table once it is at least
	// this big and bigger than the table.
	compactAt = 1 << 20
	// tableDelay batches the writes that state changes ask for.
	tableDelay = 200 * time.Millisecond
	// tableEvery is how often the table is compared with the panes (with
	// WatchChanges: with the panes that changed).
	tableEvery = time.Second
	// wholeEvery is how often the whole table is compared with the panes
	// when WatchChanges says which changed: a net under what it misses.
	wholeEvery = 30 * time.Second
)

// File is the table as written: the panes under a holder, and the lost ones.
type File struct {
	Version int   `json:"version"`
	Panes   []Row `json:"panes"`
	// Lost are panes whose holders were gone when a daemon started (a
	// reboot): corral restore starts them again.
	Lost []Row `json:"lost,omitempty"`
}

// Row is one pane of the table.
type Row struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Agent is the agent forced with --agent; Seen is the one last
	// recognised.
	Agent string `json:"agent,omitempty"`
	Seen  string `json:"seen_agent,omitempty"`
	// Argv is the command as the user gave it; Launch as it was started
	// (with the integration corral added).
	Argv   []string `json:"argv"`
	Launch []string `json:"launch"`
	Cwd    string   `json:"cwd"`
	// Env is what the user asked for (--env, the caller's PATH); Added is
	// what corral added (CORRAL_*, the integration's).
	Env     []string  `json:"env,omitempty"`
	Added   []string  `json:"added,omitempty"`
	Token   string    `json:"token"`
	Remove  bool      `json:"remove,omitempty"` // --rm
	Cols    int       `json:"cols"`
	Rows    int       `json:"rows"`
	Socket  string    `json:"socket"`
	Secret  string    `json:"secret"`
	Holder  int       `json:"holder_pid"`
	PID     int       `json:"pid"`
	Created time.Time `json:"created"`
	// Integration is what the launch carried for the agent's hooks.
	Integration *agents.Launch `json:"integration,omitempty"`
	// Sessions are the agent conversations corral saw, newest last.
	Sessions []Session       `json:"sessions,omitempty"`
	Records  []status.Record `json:"records,omitempty"`
	// State, Kind and Message are the pane's last known state; Since is
	// when it began, Source and Rule what decided it.
	State   string    `json:"state,omitempty"`
	Kind    string    `json:"kind,omitempty"`
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since,omitzero"`
	Source  string    `json:"source,omitempty"`
	Rule    string    `json:"rule,omitempty"`
	// Hooks is what the agent's hooks last said while it stands, and the
	// conversation they speak for: hooks are not said again.
	Hooks *detect.Standing `json:"hooks,omitempty"`
	// Policy and Worktree are the pane's permission policy and the git
	// worktree corral made for it.
	Policy   *Policy   `json:"policy,omitempty"`
	Worktree *Worktree `json:"worktree,omitempty"`
	// Why says why a lost pane was lost.
	Why string `json:"why,omitempty"`
}

// Policy is a pane's policy as it was read when the pane started:
// a policy file changed since does not change a running pane's.
type Policy struct {
	Source string `json:"source"`
	Text   string `json:"text"`
}

// Worktree is the git worktree corral made for a pane.
type Worktree struct {
	Path      string `json:"path"`
	Repo      string `json:"repo"`
	Branch    string `json:"branch"`
	Base      string `json:"base"`
	NewBranch bool   `json:"new_branch,omitempty"`
}

// Session is a conversation an agent reported.
type Session struct {
	Agent string    `json:"agent"`
	ID    string    `json:"id"`
	At    time.Time `json:"at"`
}

// Store is the daemon's side of the table.
type Store struct {
	path string
	dir  string // the state folder
	logf func(string, ...any)
	rows func(ids map[string]bool) []Row
	// changed says which panes' rows may have changed (WatchChanges; set
	// before Start, read by the loop alone).
	changed func() map[string]bool
	// every is tableEvery but in tests (set before Start).
	every time.Duration

	// unread: a table was there and could not be read, so the holders
	// it named are not known.
	unread bool

	mu   sync.Mutex // guards what follows
	lost []Row
	// dirtyIDs are the panes whose rows were asked to be written soon.
	dirtyIDs map[string]bool

	// wmu orders the writes and guards what follows: a hash of every row
	// as last written (nil until the first write, which writes the table
	// whole), and the sizes of the table file and the journal.
	wmu            sync.Mutex
	written        map[string]writtenRow
	tbytes, jbytes int64
	seed           maphash.Seed

	dirty chan struct{}
	// stop ends the loop that writes the table; loopDone says it has.
	stop     chan struct{}
	stopOnce sync.Once
	loopDone chan struct{}
	started  atomic.Bool
}

// writtenRow is a row as written: a hash of its compact JSON, and whether
// it is lost. Only the hash is kept (the JSON was ~2 KB a pane, kept for
// the daemon's life): it says whether a row changed, and a compaction
// reads the rows back from the table and journal it folds.
type writtenRow struct {
	sum  uint64
	lost bool
}

// journalLine is one change of the table: a row put (replacing the row of
// its id) or an id deleted.
type journalLine struct {
	Op   string `json:"op"` // "put" or "del"
	ID   string `json:"id,omitempty"`
	Lost bool   `json:"lost,omitempty"`
	Row  *Row   `json:"row,omitempty"`
}

// New is the table kept in stateDir. rows gives the rows of the live panes
// ids names (nil: all of them) that have one, a pane under a holder whose
// program runs; it is called without the store's locks, and may be nil
// (the table then keeps its lost rows alone).
func New(stateDir string, logf func(string, ...any), rows func(ids map[string]bool) []Row) *Store {
	return &Store{path: filepath.Join(stateDir, tableName), dir: stateDir, logf: logf, rows: rows, dirty: make(chan struct{}, 1),
		stop: make(chan struct{}), loopDone: make(chan struct{}), dirtyIDs: map[string]bool{}, seed: maphash.MakeSeed(), every: tableEvery}
}

func (t *Store) journalPath() string { return filepath.Join(filepath.Dir(t.path), journalName) }

// load reads the table and the journal over it; a missing one is empty,
// and a corrupt table is set aside (renamed) with a message, never
// half-trusted. A journal line that does not read (the last one, torn by
// a crash) is skipped and logged.
func (t *Store) load() File {
	f := t.loadTable()
	if t.unread {
		return f
	}
	return t.replay(f)
}

// replay applies the journal's lines to f.
func (t *Store) replay(f File) File {
	path := t.journalPath()
	b, err := safefile.ReadOwned(path, journalMax)
	if errors.Is(err, os.ErrNotExist) {
		return f
	}
	if err != nil {
		aside := path + ".bad"
		_ = os.Rename(path, aside)
		t.unread = true
		t.logf("pane table journal %s: %v; set aside as %s, the panes it names are not adopted", path, err, aside)
		return f
	}
	out, skipped := applyJournal(f, b)
	if skipped > 0 {
		t.logf("pane table journal %s: %d lines skipped (not a change this daemon reads, or cut by a crash)", path, skipped)
	}
	return out
}

// applyJournal applies the journal's lines b to f; skipped counts the
// lines it could not read (a torn last one, another version's).
func applyJournal(f File, b []byte) (out File, skipped int) {
	type slot struct {
		row  Row
		lost bool
	}
	byID := map[string]slot{}
	var order []string
	put := func(row Row, lost bool) {
		if _, ok := byID[row.ID]; !ok {
			order = append(order, row.ID)
		}
		byID[row.ID] = slot{row, lost}
	}
	for _, r := range f.Panes {
		put(r, false)
	}
	for _, r := range f.Lost {
		put(r, true)
	}
	lines := bytes.Split(b, []byte{'\n'})
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	} else if len(lines) > 0 {
		lines, skipped = lines[:len(lines)-1], 1 // torn: no newline
	}
	for _, l := range lines {
		var jl journalLine
		switch {
		case json.Unmarshal(l, &jl) != nil:
			skipped++
		case jl.Op == "put" && jl.Row != nil && jl.Row.ID != "":
			put(*jl.Row, jl.Lost)
		case jl.Op == "del" && jl.ID != "":
			delete(byID, jl.ID)
		default:
			skipped++
		}
	}
	out = File{Version: tableVersion}
	for _, id := range order {
		if sl, ok := byID[id]; ok {
			if sl.lost {
				out.Lost = append(out.Lost, sl.row)
			} else {
				out.Panes = append(out.Panes, sl.row)
			}
		}
	}
	return out, skipped
}

// readBack reads the table and journal this store wrote, for a
// compaction; unlike load, it sets nothing aside: a failure leaves both
// files as they are.
func (t *Store) readBack() (File, error) {
	var f File
	b, err := safefile.ReadOwned(t.path, tableMax)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return f, fmt.Errorf("pane table: %w", err)
	default:
		if err := json.Unmarshal(b, &f); err != nil {
			return f, fmt.Errorf("pane table %s: %w", t.path, err)
		}
	}
	j, err := safefile.ReadOwned(t.journalPath(), journalMax)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("pane table journal: %w", err)
	}
	f, _ = applyJournal(f, j)
	return f, nil
}

// loadTable reads the table file alone.
func (t *Store) loadTable() File {
	var f File
	fi, err := os.Lstat(t.path)
	if os.IsNotExist(err) {
		return f
	}
	if err != nil {
		t.unread = true
		t.logf("pane table: %v; starting without it", err)
		return f
	}
	if !fi.Mode().IsRegular() || fi.Size() > tableMax {
		t.setAside(fmt.Sprintf("not a regular file of at most %d bytes", tableMax))
		return File{}
	}
	b, err := safefile.ReadOwned(t.path, tableMax)
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err == nil && f.Version != tableVersion {
		err = fmt.Errorf("version %d, this daemon reads %d", f.Version, tableVersion)
	}
	if err != nil {
		t.setAside(err.Error())
		return File{}
	}
	return f
}

func (t *Store) setAside(why string) {
	t.unread = true
	aside := t.path + ".bad"
	_ = os.Rename(t.path, aside)
	t.logf("pane table %s: %s; set aside as %s, its panes are not adopted", t.path, why, aside)
}

// write makes the table on disk f, whole: every row, the journal folded
// in.
func (t *Store) write(f File) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	return t.writeLocked(f)
}

func (t *Store) writeLocked(f File) error {
	rows := encodeRows(f)
	t.written = make(map[string]writtenRow, len(rows))
	for id, r := range rows {
		t.written[id] = writtenRow{sum: maphash.Bytes(t.seed, r.b), lost: r.lost}
	}
	return t.writeTableLocked(rows)
}

// encodedRow is a row's compact JSON, and whether it is lost.
type encodedRow struct {
	b    []byte
	lost bool
}

// encodeRows encodes f's rows by id (a later row of an id replaces an
// earlier one).
func encodeRows(f File) map[string]encodedRow {
	rows := make(map[string]encodedRow, len(f.Panes)+len(f.Lost))
	for _, r := range f.Panes {
		b, _ := json.Marshal(r)
		rows[r.ID] = encodedRow{b: b}
	}
	for _, r := range f.Lost {
		b, _ := json.Marshal(r)
		rows[r.ID] = encodedRow{b: b, lost: true}
	}
	return rows
}

// sync writes the rows of f that changed since they were last written
// (with only, just those ids; a row of only that f lacks is deleted) as
// journal lines, and folds the journal into the table once it outgrows
// it. The first write since the daemon started writes the table whole.
func (t *Store) sync(f File, only map[string]bool) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if t.written == nil {
		if only != nil {
			return nil // the whole table comes first (adoption writes it)
		}
		return t.writeLocked(f)
	}
	var lines [][]byte
	seen := map[string]bool{}
	put := func(row Row, lost bool) {
		seen[row.ID] = true
		if only != nil && !only[row.ID] {
			return
		}
		b, _ := json.Marshal(row)
		sum := maphash.Bytes(t.seed, b)
		if w, ok := t.written[row.ID]; ok && w.lost == lost && w.sum == sum {
			return
		}
		t.written[row.ID] = writtenRow{sum: sum, lost: lost}
		line, _ := json.Marshal(journalLine{Op: "put", Lost: lost, Row: &row})
		lines = append(lines, line)
	}
	for _, r := range f.Panes {
		put(r, false)
	}
	for _, r := range f.Lost {
		put(r, true)
	}
	for id := range t.written {
		if !seen[id] && (only == nil || only[id]) {
			delete(t.written, id)
			line, _ := json.Marshal(journalLine{Op: "del", ID: id})
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	if err := t.appendLocked(lines); err != nil {
		// What the journal holds is not known: the next whole
		// comparison writes the table whole from the panes.
		t.written = nil
		return err
	}
	if t.jbytes >= compactAt && t.jbytes > t.tbytes {
		return t.compactLocked()
	}
	return nil
}

// appendLocked appends lines to the journal and syncs it.
func (t *Store) appendLocked(lines [][]byte) error {
	j, err := os.OpenFile(t.journalPath(), os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("pane table journal: %w", err)
	}
	defer j.Close()
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	n, err := j.Write(buf.Bytes())
	t.jbytes += int64(n)
	if err == nil {
		err = j.Sync()
	}
	if err != nil {
		return fmt.Errorf("pane table journal: %w", err)
	}
	return nil
}

// compactLocked folds the journal into the table: the rows as written,
// read back from both.
func (t *Store) compactLocked() error {
	f, err := t.readBack()
	if err != nil {
		return err
	}
	return t.writeTableLocked(encodeRows(f))
}

// writeTableLocked writes rows as the table file, atomically (a temporary
// file, fsync, rename), then empties the journal.
func (t *Store) writeTableLocked(rows map[string]encodedRow) error {
	ids := make([]string, 0, len(rows))
	for id := range rows {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var panes, lost [][]byte
	for _, id := range ids {
		if w := rows[id]; w.lost {
			lost = append(lost, w.b)
		} else {
			panes = append(panes, w.b)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\"version\":%d,\"panes\":[%s]", tableVersion, bytes.Join(panes, []byte(",\n")))
	if len(lost) > 0 {
		fmt.Fprintf(&b, ",\"lost\":[%s]", bytes.Join(lost, []byte(",\n")))
	}
	b.WriteString("}\n")
	if err := safefile.WriteAtomic(t.path, b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("pane table: %w", err)
	}
	t.tbytes = int64(b.Len())
	// The table now holds every change: the journal starts again.
	if err := os.Remove(t.journalPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pane table journal: %w", err)
	}
	t.jbytes = 0
	return nil
}

// takeDirty returns the ids touched since it was last called (nil: all).
func (t *Store) takeDirty() map[string]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.dirtyIDs
	t.dirtyIDs = map[string]bool{}
	if d[""] {
		return nil
	}
	return d
}

// Touch asks for a write of pane id's row soon ("": look at them all).
func (t *Store) Touch(id string) {
	t.mu.Lock()
	if id == "" {
		t.dirtyIDs[""] = true
	} else {
		t.dirtyIDs[id] = true
	}
	t.mu.Unlock()
	select {
	case t.dirty <- struct{}{}:
	default:
	}
}
