package term

import (
	"fmt"
	"testing"
)

// After CompactRows the row a spinner draws, left as cells, keeps an array
// of its own length, not the one made with room to grow while the screen
// was first drawn among rows packed since: that array's neighbours are
// gone and alone it kept their span of the heap. The spinner's next frames
// (the same length) write into it without a new one, and the screen reads
// the same.
func TestCompactRowsTightensDrawnRows(t *testing.T) {
	term := New(Options{Cols: 80, Rows: 24, ScrollbackLines: 200})
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(term, "line %d of the scrollback\r\n", i)
	}
	frame := func(i int) []byte { return fmt.Appendf(nil, "\r\x1b[K%c working (%d)", "|/-\\"[i%4], 100+i%800) }
	term.Write(frame(0))
	want := term.Snapshot().Lines
	y := term.Snapshot().CursorY
	if got := cap(term.emu.main.lines[y]); got == len(term.emu.main.lines[y]) {
		t.Fatalf("the drawn row has no room to spare before CompactRows (%d cells): the test shows nothing", got)
	}
	term.CompactRows() // every row used since when is not known
	term.Write(frame(0))
	term.CompactRows()
	row := term.emu.main.lines[y]
	if len(row) == 0 || cap(row) != len(row) {
		t.Fatalf("the drawn row after CompactRows: %d cells, room for %d; want room for its cells alone", len(row), cap(row))
	}
	if term.emu.main.rowsPacked() != 23 {
		t.Fatalf("%d rows packed, want 23", term.emu.main.rowsPacked())
	}
	if got := term.Snapshot().Lines; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the screen after CompactRows:\n%q\nwant\n%q", got, want)
	}
	frames := make([][]byte, 8)
	for i := range frames {
		frames[i] = frame(i)
	}
	i := 0
	if n := testing.AllocsPerRun(100, func() { i++; term.Write(frames[i%len(frames)]) }); n != 0 {
		t.Fatalf("a spinner frame of the same length allocates %.0f times after CompactRows", n)
	}
	checkRows(t, term)
}
