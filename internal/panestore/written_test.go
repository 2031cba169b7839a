package panestore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/status"
)

// row is a pane's row the size of a real one (~1.5 KB of JSON: an
// environment, a launch line, records), version v of it.
func testRow(i, v int) Row {
	at := time.Date(2026, 12, 3, 21, 0, v, 0, time.UTC)
	return Row{
		ID: fmt.Sprintf("p%04d", i), Name: fmt.Sprintf("pane-%d", i),
		Argv:   []string{"bash", "-c", strings.Repeat("x", 120)},
		Launch: []string{"bash", "-c", strings.Repeat("y", 120)},
		Cwd:    "/home/someone/src/project",
		Env:    []string{"PATH=/usr/local/bin:/usr/bin:/bin", "TERM=xterm-256color", "LANG=C.UTF-8", strings.Repeat("Z", 400)},
		Token:  strings.Repeat("t", 32), Cols: 120, Rows: 40,
		Socket: fmt.Sprintf("/run/user/1000/corral/holders/%05d.sock", i), Secret: strings.Repeat("s", 64),
		Holder: 1000 + i/256, PID: 20000 + i, Created: at,
		Records: []status.Record{{Report: status.Report{State: status.Working, Msg: fmt.Sprintf("turn %d", v)}, Updated: at}},
		State:   "working", Since: at, Source: "report",
	}
}

// A compaction folds the journal into the table from what was written
// (the store keeps only a hash of each row): the table it writes is the
// one written whole from the same rows, byte for byte, and the next
// daemon reads those rows back.
func TestCompactionReadsBackWhatWasWritten(t *testing.T) {
	const n = 40
	dir := t.TempDir()
	tb := New(dir, t.Logf, nil)
	f := File{}
	for i := range n {
		f.Panes = append(f.Panes, testRow(i, 0))
	}
	if err := tb.write(f); err != nil {
		t.Fatal(err)
	}
	// Changes until the journal has been folded in by a sync, then one
	// round more left in the journal; the rounds delete a pane and lose
	// another.
	compacted := false
	for v := 1; ; v++ {
		f = File{}
		for i := range n {
			if i != 7 && i != 9 {
				f.Panes = append(f.Panes, testRow(i, v))
			}
		}
		lostRow := testRow(7, v)
		lostRow.Why = "its holder is gone"
		f.Lost = []Row{lostRow}
		before := tb.jbytes
		if err := tb.sync(f, nil); err != nil {
			t.Fatal(err)
		}
		if compacted {
			break
		}
		compacted = tb.jbytes < before
		if v > 200 {
			t.Fatalf("no compaction after %d rounds of changes (journal %d bytes, table %d)", v, tb.jbytes, tb.tbytes)
		}
	}
	if tb.jbytes == 0 {
		t.Fatal("the last round left nothing in the journal")
	}
	if err := tb.compactLocked(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, tableName))
	if _, err := os.Stat(filepath.Join(dir, journalName)); !os.IsNotExist(err) {
		t.Fatalf("the journal is left after a compaction: %v", err)
	}
	whole := New(t.TempDir(), t.Logf, nil)
	if err := whole.write(f); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(whole.path)
	if !bytes.Equal(got, want) {
		t.Fatalf("the compacted table differs from the table written whole:\n%s\nwant\n%s", got, want)
	}
	read := New(dir, t.Logf, nil).load()
	if len(read.Panes) != n-2 || len(read.Lost) != 1 || read.Lost[0].ID != "p0007" || read.Panes[0].Records[0].Msg != f.Panes[0].Records[0].Msg {
		t.Fatalf("read back: %d panes, %d lost", len(read.Panes), len(read.Lost))
	}
}

// The store keeps a small fixed cost a pane for knowing which rows changed,
// not each row's JSON (which was ~2 KB a pane for the daemon's life).
func TestStoreKeepsNoRowPerPane(t *testing.T) {
	const n = 2000
	dir := t.TempDir()
	tb := New(dir, t.Logf, nil)
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	mk := func(v int) File {
		f := File{}
		for i := range n {
			f.Panes = append(f.Panes, testRow(i, v))
		}
		return f
	}
	before := heap()
	if err := tb.write(mk(0)); err != nil {
		t.Fatal(err)
	}
	if err := tb.sync(mk(1), nil); err != nil {
		t.Fatal(err)
	}
	after := heap()
	runtime.KeepAlive(tb)
	per := (int64(after) - int64(before)) / n
	t.Logf("%d bytes a pane kept by the store (%d panes)", per, n)
	// An id, a hash and a map slot: ~100 bytes. The rows' JSON would be
	// over 1,000.
	if per > 300 {
		t.Fatalf("the store keeps %d bytes a pane; at most 300 (a hash of each row, not the row)", per)
	}
}
