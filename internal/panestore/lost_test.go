package panestore

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/proctest"
)

func ids(rows []Row) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, r.ID)
	}
	return out
}

// corral restore takes the lost panes it names, by id or name, and none
// when one name matches nothing; what it could not start goes back first.
func TestTakeLost(t *testing.T) {
	lost := []Row{{ID: "a1", Name: "web"}, {ID: "b2"}, {ID: "c3", Name: "db"}}
	for _, tc := range []struct {
		name        string
		ask         []string
		picked, now []string
		missing     []string
	}{
		{"all", nil, []string{"a1", "b2", "c3"}, []string{}, nil},
		{"by id", []string{"b2"}, []string{"b2"}, []string{"a1", "c3"}, nil},
		{"by name", []string{"db", "web"}, []string{"a1", "c3"}, []string{"b2"}, nil},
		{"one unknown takes nothing", []string{"a1", "zz"}, []string{}, []string{"a1", "b2", "c3"}, []string{"zz"}},
	} {
		s := New(t.TempDir(), t.Logf, nil)
		for _, r := range lost {
			s.AddLost(r, "gone")
		}
		picked, missing := s.TakeLost(tc.ask)
		if got := ids(picked); !reflect.DeepEqual(got, tc.picked) || !reflect.DeepEqual(missing, tc.missing) {
			t.Errorf("%s: picked %v missing %v, want %v %v", tc.name, got, missing, tc.picked, tc.missing)
		}
		if got := ids(s.Lost()); !reflect.DeepEqual(got, tc.now) {
			t.Errorf("%s: left %v, want %v", tc.name, got, tc.now)
		}
		s.ReturnLost(picked)
		if got := ids(s.Lost()); !reflect.DeepEqual(got, append(append([]string{}, tc.picked...), tc.now...)) {
			t.Errorf("%s: after ReturnLost %v", tc.name, got)
		}
	}
	s := New(t.TempDir(), t.Logf, nil)
	s.AddLost(Row{ID: "a1", Why: "old"}, "new reason")
	if l := s.Lost(); l[0].Why != "new reason" {
		t.Errorf("AddLost kept why %q", l[0].Why)
	}
	if l := s.LostPanes(); len(l) != 1 || l[0].State != StateLost || !strings.Contains(l[0].Message, "new reason") {
		t.Errorf("LostPanes: %+v", l)
	}
}

func TestNoteSession(t *testing.T) {
	var r Row
	at := time.Now()
	r.NoteSession("claude-code", "s1", at)
	r.NoteSession("claude-code", "s1", at.Add(time.Second)) // the same again: no new entry
	if len(r.Sessions) != 1 || !r.Sessions[0].At.Equal(at) {
		t.Fatalf("a repeated session: %+v", r.Sessions)
	}
	r.NoteSession("codex", "s1", at) // another agent's is another session
	for i := range 10 {
		r.NoteSession("claude-code", string(rune('a'+i)), at)
	}
	if len(r.Sessions) != 8 || r.Sessions[7].ID != "j" || r.Sessions[0].ID != "c" {
		t.Fatalf("the newest eight: %+v", r.Sessions)
	}
}

func TestLastKnown(t *testing.T) {
	t0, t1 := time.Unix(100, 0), time.Unix(200, 0)
	row := Row{State: "blocked", Kind: "permission", Message: "run ls?", Source: "screen", Rule: "perm", Since: t0}
	for _, tc := range []struct {
		name  string
		ev    Logged
		state combine.State
		rule  string
		since time.Time
	}{
		{"nothing logged", Logged{}, combine.Blocked, "perm", t0},
		{"the log agrees", Logged{combine.Decision{State: combine.Blocked, Kind: "permission", Message: "run ls?"}, t1}, combine.Blocked, "perm", t0},
		{"another prompt logged", Logged{combine.Decision{State: combine.Blocked, Kind: "permission", Message: "rm?"}, t1}, combine.Blocked, "", t1},
		{"a newer state logged", Logged{combine.Decision{State: combine.Working}, t1}, combine.Working, "", t1},
	} {
		d, since := LastKnown(row, tc.ev)
		if d.State != tc.state || d.Rule != tc.rule || !since.Equal(tc.since) {
			t.Errorf("%s: %+v since %v", tc.name, d, since)
		}
	}
}

// A touched row is written soon, as a journal line holding only it; Stop
// folds the journal into the table.
func TestStoreWritesTouchedRows(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	live := map[string]Row{"a1": {ID: "a1", State: "idle"}, "b2": {ID: "b2", State: "idle"}}
	var asked []map[string]bool
	s := New(dir, t.Logf, func(ids map[string]bool) []Row {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, ids)
		var out []Row
		for id, r := range live {
			if ids == nil || ids[id] {
				out = append(out, r)
			}
		}
		return out
	})
	s.Save() // the first write is the table, whole
	table, err := os.ReadFile(filepath.Join(dir, tableName))
	if err != nil || !strings.Contains(string(table), `"b2"`) {
		t.Fatalf("the table: %s %v", table, err)
	}
	s.Start()
	mu.Lock()
	live["a1"] = Row{ID: "a1", State: "working"}
	asked = nil
	mu.Unlock()
	s.Touch("a1")
	journal := filepath.Join(dir, journalName)
	var b []byte
	if !proctest.WaitFor(5*time.Second, func() bool {
		b, _ = os.ReadFile(journal)
		return strings.Contains(string(b), `"working"`)
	}) {
		t.Fatal("a touched row was not written")
	}
	if strings.Count(string(b), "\n") != 1 || strings.Contains(string(b), `"b2"`) {
		t.Fatalf("the journal holds more than the touched row: %s", b)
	}
	mu.Lock()
	if !slices.ContainsFunc(asked, func(m map[string]bool) bool { return len(m) == 1 && m["a1"] }) {
		t.Errorf("the rows asked for: %v, want a1's alone", asked)
	}
	mu.Unlock()
	s.AddLost(Row{ID: "c3"}, "gone")
	s.Stop()
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Errorf("the journal is still there after Stop: %v", err)
	}
	f := New(dir, t.Logf, nil).load()
	if got := ids(f.Panes); len(got) != 2 || len(f.Lost) != 1 || f.Lost[0].Why != "gone" {
		t.Fatalf("read back: %+v", f)
	}
	for _, r := range f.Panes {
		if r.ID == "a1" && r.State != "working" {
			t.Errorf("a1 read back as %q", r.State)
		}
	}
}

// With WatchChanges, the loop's tick writes what changed untold (a size,
// OSC 7501 records) and nothing else: while nothing changes, no row is
// built or encoded, whatever the number of panes.
func TestStoreTickWritesChangedRowsAlone(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	live := map[string]Row{}
	for i := range 200 {
		id := fmt.Sprintf("p%d", i)
		live[id] = Row{ID: id, State: "idle"}
	}
	whole, asked := 0, 0
	s := New(dir, t.Logf, func(ids map[string]bool) []Row {
		mu.Lock()
		defer mu.Unlock()
		if ids == nil {
			whole++
		}
		var out []Row
		for id, r := range live {
			if ids == nil || ids[id] {
				out = append(out, r)
			}
		}
		return out
	})
	s.Save()
	var change map[string]bool
	s.WatchChanges(func() map[string]bool {
		mu.Lock()
		defer mu.Unlock()
		asked++
		c := change
		change = nil
		return c
	})
	mu.Lock()
	whole = 0
	live["p7"] = Row{ID: "p7", State: "idle", Cols: 132}
	change = map[string]bool{"p7": true}
	mu.Unlock()
	s.every = 100 * time.Millisecond // three ticks in 0.3 s rather than 3
	s.Start()
	defer s.Stop()
	journal := filepath.Join(dir, journalName)
	if !proctest.WaitFor(10*time.Second, func() bool {
		b, _ := os.ReadFile(journal)
		return strings.Contains(string(b), `"cols":132`)
	}) {
		t.Fatal("a change no Touch told was not written")
	}
	if !proctest.WaitFor(10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return asked >= 3
	}) {
		t.Fatal("the loop stopped asking what changed")
	}
	mu.Lock()
	defer mu.Unlock()
	if whole != 0 {
		t.Errorf("the whole table was built %d times in %d ticks with nothing changed", whole, asked)
	}
}

// A starting daemon adopts one row per socket; a lost pane whose holder
// is gone stays lost, and a socket the table does not name and nobody
// listens on is removed.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	hdir := filepath.Join(dir, "holders")
	if err := os.Mkdir(hdir, 0o700); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(hdir, "zz.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stray, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	sock := filepath.Join(hdir, "a1.sock")
	// Written by hand: the store itself never writes an id twice.
	b, _ := json.Marshal(File{Version: tableVersion, Panes: []Row{{ID: "a1", Socket: sock}, {ID: "a2", Socket: sock}, {ID: "a1", Socket: "other"}},
		Lost: []Row{{ID: "l1", Holder: 0}}})
	if err := os.WriteFile(filepath.Join(dir, tableName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	next := New(dir, t.Logf, nil)
	if got := ids(next.Open()); !reflect.DeepEqual(got, []string{"a1"}) {
		t.Errorf("rows to adopt: %v", got)
	}
	if got := ids(next.Lost()); !reflect.DeepEqual(got, []string{"l1"}) {
		t.Errorf("lost: %v", got)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("the stray socket nobody listens on is still there: %v", err)
	}
}

// Dial says why a row cannot be adopted before and when it connects.
func TestDialRefuses(t *testing.T) {
	dir := t.TempDir()
	s := New(dir, t.Logf, nil)
	secret := strings.Repeat("s", 32)
	gone := filepath.Join(dir, "holders", "g1.sock")
	for _, tc := range []struct {
		name string
		row  Row
		want string
	}{
		{"no secret", Row{ID: "a1", Socket: filepath.Join(dir, "holders", "a1.sock"), Launch: []string{"sh"}}, "lacks an id, a socket, a secret"},
		{"outside the state folder", Row{ID: "a1", Socket: "/tmp/x.sock", Secret: secret, Launch: []string{"sh"}}, "not in this daemon's state folder"},
		{"holder gone", Row{ID: "g1", Socket: gone, Secret: secret, Launch: []string{"sh"}, Holder: 1 << 30}, "no longer holds it"},
	} {
		hc, err := s.Dial(tc.row)
		if err == nil {
			hc.Close()
			t.Errorf("%s: adopted", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want …%s…", tc.name, err, tc.want)
		}
	}
}
