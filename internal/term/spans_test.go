package term

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"
)

// Terminals started one after another, each drawing 200 lines and then a
// spinner (the scale benchmark's panes), and their rows compacted: what
// they keep must not pin the spans of what they threw away. Measured as
// the heap's free slots in spans in use (HeapInuse - HeapAlloc after a
// collection) that the terminals add, a terminal.
func TestCompactedTerminalsLeaveSpansFull(t *testing.T) {
	const terms = 300
	freeSlots := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapInuse) - int64(m.HeapAlloc)
	}
	lines := make([][]byte, 200)
	for i := range lines {
		lines[i] = fmt.Appendf(nil, "line %d of the scrollback\r\n", i+1)
	}
	spin := []byte("\r\x1b[K| working (100)")
	before := freeSlots()
	// No collection until the end: one while the terminals were drawn let
	// later rows reuse the slots of rows packed before it, as much as its
	// moment allowed, which the machine's load decided (-120 to 3,600
	// bytes; 1 of 60 fresh runs and 22 of 300 in a process over 1 KB).
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	ts := make([]*Terminal, terms)
	for i := range ts {
		ts[i] = New(Options{Cols: 80, Rows: 24, ScrollbackLines: 200})
		for _, l := range lines {
			ts[i].Write(l)
		}
		ts[i].Write(spin)
		ts[i].Snapshot()
	}
	for range 2 {
		for _, term := range ts {
			term.Write(spin)
			term.CompactRows()
		}
	}
	per := float64(freeSlots()-before) / terms
	t.Logf("free slots in the heap's spans: %.0f bytes a terminal", per)
	// 480-940 bytes measured so (with -race too), 7.1-7.4 KB when what a
	// compacted screen keeps was made among the rows it packed.
	if per > 2048 {
		t.Fatalf("300 terminals with their rows compacted leave %.0f bytes a terminal of free slots in the heap's spans, want at most 2 KB", per)
	}
	runtime.KeepAlive(ts)
}
