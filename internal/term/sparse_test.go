package term

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// Rows are sparse: a row holds its cells up to the last one written, the
// columns past its end read as blanks. These tests check the writes that
// must lengthen a row, against the reference, and what a row costs.

// rowCells returns the cells the visible rows hold and have room for.
func (e *emulator) rowCells() (held, room int) {
	for _, s := range []*screen{&e.main, &e.alt} {
		for _, l := range s.lines {
			held += len(l)
			room += cap(l)
		}
	}
	return held, room
}

// checkRows fails if a row is longer, or has room for more, than the
// screen is wide.
func checkRows(t *testing.T, term *Terminal) {
	t.Helper()
	e := term.emu
	for _, s := range []*screen{&e.main, &e.alt} {
		for y, l := range s.lines {
			if len(l) > e.cols || cap(l) > e.cols {
				t.Fatalf("row %d: %d cells, room for %d, on a screen %d wide", y, len(l), cap(l), e.cols)
			}
		}
	}
}

// Each program runs on corral's screen and on the reference, written
// whole and then byte by byte, and both must show the same screen (rows,
// colours, rendering, scrollback) after each step.
func TestSparseRowsAgainstReference(t *testing.T) {
	long := strings.Repeat("abcdefghij", 3)
	tests := []struct{ name, prog string }{
		{"BCE erase to the end of a short row", "ab\x1b[48;5;4m\x1b[K\x1b[0mx"},
		{"BCE erase of a whole blank row", "\x1b[3;1H\x1b[41m\x1b[2K\x1b[m"},
		{"BCE erase to the start", "\x1b[2;9H\x1b[42m\x1b[1K"},
		{"BCE erase of the display below", "ab\r\ncd\x1b[1;2H\x1b[44m\x1b[J"},
		{"BCE erase of the display above", "\x1b[3;4H\x1b[44m\x1b[1J\x1b[mz"},
		{"BCE erase characters past the end", "ab\x1b[6G\x1b[43m\x1b[3X"},
		{"BCE then default erase shortens", "\x1b[45m\x1b[2K\x1b[m\x1b[K\x1b[2Kq"},
		{"styled space is kept", "\x1b[7m \x1b[m\r\n\x1b[4m  \x1b[m"},
		{"space in the default style past the end", "ab   \x1b[Kc"},
		{"ICH in a short row", "abc\x1b[2G\x1b[3@"},
		{"ICH past the end", "abc\x1b[8G\x1b[2@x"},
		{"ICH with BCE", "abc\x1b[2G\x1b[46m\x1b[4@"},
		{"ICH pushes a wide char off the edge", "\x1b[9G한\x1b[1G\x1b[1@"},
		{"ICH on a full row", long + "\x1b[1;3H\x1b[5@"},
		{"DCH in a short row", "abcdef\x1b[2G\x1b[2P"},
		{"DCH past the end", "abc\x1b[9G\x1b[3P"},
		{"DCH with BCE", "abcdef\x1b[2G\x1b[41m\x1b[2P"},
		{"DCH over wide chars", "a한글b\x1b[2G\x1b[1P"},
		{"DCH pulls a wide char", "ab한글\x1b[1G\x1b[1P"},
		{"DCH on a styled wide char at the end", "\x1b[31m한\x1b[m\x1b[1G\x1b[1P"},
		{"wide char at the last column", "\x1b[10G한x"},
		{"wide char at the last column with a colour", "\x1b[10G\x1b[31m한\x1b[mx"},
		{"wide char just fits", "\x1b[9G한x"},
		{"half a wide char overwritten", "한글\x1b[4Gx"},
		{"wide char erased from its second half", "한글\x1b[2G\x1b[K"},
		{"styled wide char erased from its second half", "\x1b[41m한\x1b[m\x1b[2G\x1b[K"},
		{"cursor far right then printing", "\x1b[1;9Hab\x1b[3;10Hc"},
		{"printing without autowrap", "\x1b[?7l\x1b[8G" + long},
		{"zero-width char past the end", "\x1b[5G\u200bx"},
		{"combining mark past the end", "\x1b[6Ge\u0301"},
		{"REP", "x\x1b[25b"},
		{"REP from the middle", "\x1b[5Gy\x1b[3b"},
		{"REP of a wide char", "한\x1b[4b"},
		{"tab then print", "\tx\t\ty"},
		{"DEC special graphics", "\x1b[4G\x1b(0lqqk\x1b(B"},
		{"scroll keeps nothing of the row it reuses", "1111111111\r\n2\r\n3\r\n4\r\n5\r\n6\r\n"},
		{"scroll with BCE", "a\r\nb\x1b[44m\r\n\r\n\r\n\r\n\x1b[m\r\nc"},
		{"scroll region up", "1\r\n22\r\n333\r\n4444\x1b[2;4r\x1b[4;1H\n\nx"},
		{"scroll region down", "1\r\n22\r\n333\r\n4444\x1b[2;4r\x1b[2;1H\x1bM\x1bMx"},
		{"SU and SD with BCE", "abc\r\ndef\x1b[42m\x1b[2S\x1b[1T\x1b[m"},
		{"IL and DL", "a\r\nbb\r\nccc\x1b[2;1H\x1b[2L\x1b[1M"},
		{"margins: IL", "aaaaaaaaaa\r\nbbb\r\nccccccccc\x1b[?69h\x1b[3;7s\x1b[1;1H\x1b[L"},
		{"margins: DL", "aaaaaaaaaa\r\nbbb\r\nccccccccc\x1b[?69h\x1b[3;7s\x1b[1;1H\x1b[M"},
		{"margins: DL pulls a short row", "aaaaaaaaaa\r\nb\r\ncccccc\x1b[?69h\x1b[2;9s\x1b[1;1H\x1b[2M"},
		{"margins: scroll up at the bottom", "aaaaaaaaaa\r\nbbbbbbbbbb\r\ncc\r\ndddd\x1b[?69h\x1b[4;8s\x1b[2;4r\x1b[4;5H\n\n"},
		{"margins: scroll down", "aaaaaaaaaa\r\nbbbbbbbbbb\r\ncc\x1b[?69h\x1b[2;5s\x1b[1;1H\x1b[2T"},
		{"margins: BCE IL", "aaaaaaaaaa\r\nbbb\x1b[?69h\x1b[3;7s\x1b[1;1H\x1b[41m\x1b[L"},
		{"margins: ICH and DCH", "aaaaaaaaaa\r\nbb\x1b[?69h\x1b[3;7s\x1b[1;4H\x1b[2@\x1b[2;4H\x1b[2@\x1b[1;2H\x1b[3P"},
		{"margins cut a wide char", "a한글한글\r\n\r\n\x1b[?69h\x1b[3;6s\x1b[1;1H\x1b[M"},
		// A left/right margin cuts a wide character: the row below ends in
		// half of it, which a later edit blanks past the row's end.
		{"margins: DCH on a cut wide char at the row's end", "ab\x1b[41m한\x1b[m\x1b[?69h\x1b[1;3s\x1b[L\x1b[1;10s\x1b[2;3H\x1b[P"},
		{"margins: EL on a cut wide char at the row's end", "ab\x1b[41m한\x1b[m\x1b[?69h\x1b[1;3s\x1b[L\x1b[1;10s\x1b[2;2H\x1b[K"},
		{"margins: BCE ECH on a cut wide char", "ab\x1b[41m한\x1b[m\x1b[?69h\x1b[1;3s\x1b[L\x1b[1;10s\x1b[2;3H\x1b[44m\x1b[X"},
		{"margins: print on a cut wide char", "ab\x1b[41m한\x1b[m\x1b[?69h\x1b[1;3s\x1b[L\x1b[1;10s\x1b[2;3Hx"},
		{"margins: ICH on a cut wide char", "ab\x1b[41m한\x1b[m\x1b[?69h\x1b[1;3s\x1b[L\x1b[1;10s\x1b[2;2H\x1b[2@"},
		{"margins: wide char at the right margin", "\x1b[?69h\x1b[1;5s\x1b[1;5H한x"},
		{"alternate screen", "main\x1b[?1049h\x1b[3;3Halt\x1b[44m\x1b[2K\x1b[?1049lz\x1b[?1049hq"},
		{"RIS", "abc\x1b[41m\x1b[2;1H\x1b[K\x1bcz"},
		{"ED 2 pushes rows to history", "a\r\n\x1b[41m \x1b[m\r\nc\x1b[2J"},
		{"ED 3", "a\r\nb\x1b[3J"},
		{"hyperlinks", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b[5Gz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sizes := [][2]int{{10, 4}, {7, 3}, {13, 5}}
			for _, size := range sizes {
				for _, bytewise := range []bool{false, true} {
					d := newDiffPair(size[0], size[1], 10)
					chunks := []string{tt.prog}
					if bytewise {
						chunks = strings.Split(tt.prog, "")
					}
					for _, c := range chunks {
						d.ours.Write([]byte(c))
						d.ref.Write([]byte(c))
					}
					if n, msg := d.ref.Panics(); n > 0 {
						// The reference broke (margins past its edge) and
						// was replaced: no reference here.
						if size == sizes[0] {
							t.Fatalf("%dx%d: the reference panicked: %s", size[0], size[1], msg)
						}
						d.close()
						continue
					}
					if diff := d.compare(); diff != "" {
						t.Fatalf("%dx%d bytewise=%v: %s", size[0], size[1], bytewise, diff)
					}
					checkRows(t, d.ours)
					d.close()
				}
			}
		})
	}
}

// resizeStep resizes both terminals, then writes prog to both.
type resizeStep struct {
	cols, rows int
	prog       string
}

// resizeSteps runs steps on a 10x4 pair, comparing them after each.
func resizeSteps(t *testing.T, steps []resizeStep) {
	t.Helper()
	d := newDiffPair(10, 4, 10)
	defer d.close()
	for i, st := range steps {
		d.ours.Resize(st.cols, st.rows)
		d.ref.Resize(st.cols, st.rows)
		d.ours.Write([]byte(st.prog))
		d.ref.Write([]byte(st.prog))
		if diff := d.compare(); diff != "" {
			t.Fatalf("step %d (%dx%d): %s", i, st.cols, st.rows, diff)
		}
		checkRows(t, d.ours)
	}
}

// Resizes: rows cut and kept, rows widened and written past their old end.
func TestSparseRowsResize(t *testing.T) {
	steps := []resizeStep{
		{10, 4, "abcdefghij\r\n\x1b[44mxy\x1b[K\x1b[m\r\n한글한글한"},
		{16, 5, "\x1b[1;14Hwide\x1b[2;12H\x1b[41m\x1b[1@"},
		{6, 3, "\x1b[1;5H한z"},
		{20, 6, "\x1b[3;18H!!!\x1b[6;1Hbottom"},
		{8, 2, ""},
		{12, 4, "\x1b[2;1H\x1b[3P\x1b[1;11Hq"},
	}
	resizeSteps(t, steps)
}

// The same on the alternate screen. (Leaving it after a resize is not
// compared: the reference leaves the main screen's cursor off the resized
// screen, see resize.)
func TestSparseRowsResizeAltScreen(t *testing.T) {
	steps := []resizeStep{
		{10, 4, "main text\x1b[?1049h\x1b[2;3Halt\x1b[44m\x1b[K\x1b[m"},
		{16, 5, "\x1b[1;14Hwide\x1b[2;12H\x1b[41m\x1b[1@\x1b[m"},
		{6, 3, "\x1b[1;5H한z\x1b[3;2H\x1b[42m\x1b[2@"},
		{12, 6, "\x1b[6;11Hqq\x1b[2;1H\x1b[M"},
	}
	resizeSteps(t, steps)
}

// A mostly blank 120x32 screen holds a few hundred bytes of cells, not a
// screenful.
func TestSparseRowsMemory(t *testing.T) {
	term := New(Options{Cols: 120, Rows: 32})
	defer term.Close()
	const cellSize = int(unsafe.Sizeof(cell{}))
	if _, room := term.emu.rowCells(); room != 0 {
		t.Fatalf("a new screen has room for %d cells", room)
	}
	term.Write([]byte("\x1b[2J\x1b[H\x1b[1mhello\x1b[m world\r\n\r\n\x1b[38;5;174m●\x1b[m done\x1b[32;1H? for shortcuts"))
	held, room := term.emu.rowCells()
	t.Logf("%d cells held, room for %d: %d bytes", held, room, room*cellSize)
	if room*cellSize > 512 {
		t.Fatalf("a screen of three short rows has room for %d cells (%d bytes)", room, room*cellSize)
	}
	if held != len("hello world")+len("* done")+len("? for shortcuts") {
		t.Fatalf("%d cells held", held)
	}
	checkRows(t, term)
}

// Erasing to blanks gives a row's length back and keeps its room, so the
// row is redrawn without allocating.
func TestSparseRowsEraseShortens(t *testing.T) {
	term := New(Options{Cols: 120, Rows: 32})
	defer term.Close()
	e := term.emu
	term.Write([]byte("\x1b[5;1H" + strings.Repeat("x", 100) + "\x1b[6;1Hshort line\x1b[7;1H\x1b[44m\x1b[K\x1b[m"))
	tests := []struct {
		name, seq string
		row, want int
	}{
		{"EL 0 from the middle", "\x1b[5;41H\x1b[K", 4, 40},
		{"EL 0 keeps a styled cell before", "\x1b[5;3H\x1b[7m \x1b[m\x1b[K", 4, 3},
		{"EL 2", "\x1b[5;3H\x1b[2K", 4, 0},
		{"EL 0 on a BCE row", "\x1b[7;1H\x1b[K", 6, 0},
		{"ECH to the end", "\x1b[6;6H\x1b[10X", 5, 5},
		{"ED 0", "\x1b[6;1H\x1b[J", 5, 0},
	}
	for _, tt := range tests {
		before := cap(e.scr.lines[tt.row])
		term.Write([]byte(tt.seq))
		l := e.scr.lines[tt.row]
		if len(l) != tt.want || cap(l) != before {
			t.Errorf("%s: row holds %d cells with room for %d, want %d with room for %d", tt.name, len(l), cap(l), tt.want, before)
		}
	}
	term.Write([]byte("\x1b[H\x1b[2J"))
	if held, _ := e.rowCells(); held != 0 {
		t.Fatalf("a cleared screen holds %d cells", held)
	}
}

// A spinner redrawn in place, and lines that scroll the screen, do not
// allocate once the rows have room: erased rows keep their room, and a row
// scrolled off the top comes back, emptied, as the new bottom row.
func TestSparseRowsSteadyState(t *testing.T) {
	term := New(Options{Cols: 120, Rows: 32, ScrollbackLines: 1})
	defer term.Close()
	frames := []string{"✻", "✶", "✳", "✢"}
	for i := range 40 {
		fmt.Fprintf(term, "\x1b[30;1H\x1b[38;5;174m%s\x1b[39m Working… (%ds · esc to interrupt)\x1b[K", frames[i%4], i)
	}
	i := 0
	if n := testing.AllocsPerRun(200, func() {
		fmt.Fprintf(term, "\x1b[30;1H\x1b[38;5;174m%s\x1b[39m Working…\x1b[K", frames[i%4])
		i++
	}); n > 1 { // the formatting's own
		t.Fatalf("a spinner frame allocates %.1f times", n)
	}
	line := []byte("\x1b[38;5;174m●\x1b[39m Read \x1b[1minternal/parser/lexer.go\x1b[22m and updated it\r\n")
	for range 100 {
		term.Write(line)
	}
	if n := testing.AllocsPerRun(200, func() { term.Write(line) }); n != 0 {
		t.Fatalf("a scrolled line allocates %.1f times", n)
	}
	checkRows(t, term)
}

// A row typed one character at a time moves to a larger array a few
// times, not once per character.
func TestSparseRowsGrowInSteps(t *testing.T) {
	for _, ch := range []string{"x", "─", "한"} {
		term := New(Options{Cols: 120, Rows: 4})
		moves, last := 0, -1
		for range 120 {
			term.Write([]byte(ch))
			if l := term.emu.scr.lines[0]; cap(l) != last {
				moves++
				last = cap(l)
			}
			if term.emu.scr.cur.x == 119 {
				break
			}
		}
		if moves > 6 {
			t.Errorf("%q: the row moved %d times", ch, moves)
		}
		checkRows(t, term)
		term.Close()
	}
}
