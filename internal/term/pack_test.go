package term

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// twin is a terminal that is compacted and one that never is, written the
// same bytes: every read of the first must equal the second's.
type twin struct {
	packed, plain               *Terminal
	packedReplies, plainReplies bytes.Buffer
	packedEvents, plainEvents   []Event
}

func newTwin(cols, rows, scrollback int) *twin {
	w := &twin{}
	w.packed = New(Options{Cols: cols, Rows: rows, ScrollbackLines: scrollback, Replies: &w.packedReplies,
		OnEvent: func(e Event) { w.packedEvents = append(w.packedEvents, e) }})
	w.plain = New(Options{Cols: cols, Rows: rows, ScrollbackLines: scrollback, Replies: &w.plainReplies,
		OnEvent: func(e Event) { w.plainEvents = append(w.plainEvents, e) }})
	return w
}

func (w *twin) write(p []byte) {
	w.packed.Write(p)
	w.plain.Write(p)
}

func (w *twin) resize(cols, rows int) {
	w.packed.Resize(cols, rows)
	w.plain.Resize(cols, rows)
}

// compact packs the first terminal and checks the packing kept every cell.
func (w *twin) compact(t *testing.T) {
	t.Helper()
	before := screenCells(w.packed)
	w.packed.Compact()
	if !w.packed.emu.packed {
		t.Fatal("Compact left the screen unpacked")
	}
	if after := screenCells(w.packed); !reflect.DeepEqual(before, after) {
		t.Fatalf("cells changed by packing:\nbefore %v\nafter  %v", before, after)
	}
}

// compactRows packs the first terminal's unused rows and checks the
// packing kept every cell.
func (w *twin) compactRows(t *testing.T) {
	t.Helper()
	before := screenCells(w.packed)
	w.packed.CompactRows()
	if after := screenCells(w.packed); !reflect.DeepEqual(before, after) {
		t.Fatalf("cells changed by packing rows:\nbefore %v\nafter  %v", before, after)
	}
}

// packedRows counts the rows packed one by one.
func packedRows(term *Terminal) int {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.emu.main.rowsPacked() + term.emu.alt.rowsPacked()
}

// screenCells copies both screens' cells (a nil row and an empty one
// alike), reading a packed terminal through peek.
func screenCells(term *Terminal) [2][][]cell {
	term.mu.Lock()
	defer term.mu.Unlock()
	defer term.emu.peek()()
	var out [2][][]cell
	for i, s := range []*screen{&term.emu.main, &term.emu.alt} {
		if s.lines == nil {
			continue
		}
		out[i] = make([][]cell, len(s.lines))
		for y, l := range s.lines {
			out[i][y] = append([]cell{}, l...)
		}
	}
	return out
}

// check compares every read of the two terminals.
func (w *twin) check(t *testing.T, when string) {
	t.Helper()
	a, b := w.packed, w.plain
	if got, want := a.Snapshot(), b.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: snapshot\n%+v\nwant\n%+v", when, got, want)
	}
	if got, want := a.ANSI(), b.ANSI(); got != want {
		t.Fatalf("%s: ANSI\n%q\nwant\n%q", when, got, want)
	}
	if got, want := a.StyledRows(), b.StyledRows(); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: styled rows\n%v\nwant\n%v", when, got, want)
	}
	gotCP, gotOK := a.Checkpoint()
	wantCP, wantOK := b.Checkpoint()
	if gotOK != wantOK || !bytes.Equal(gotCP, wantCP) {
		t.Fatalf("%s: checkpoint %v %q\nwant %v %q", when, gotOK, gotCP, wantOK, wantCP)
	}
	if got, want := a.Scrollback(0), b.Scrollback(0); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: scrollback %q, want %q", when, got, want)
	}
	if got, want := a.Scrollback(2), b.Scrollback(2); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: last two rows of history %q, want %q", when, got, want)
	}
	if got, want := a.decModeSettingLockedForTest(), b.decModeSettingLockedForTest(); got != want {
		t.Fatalf("%s: DECRQM answers %v, want %v", when, got, want)
	}
	if !bytes.Equal(w.packedReplies.Bytes(), w.plainReplies.Bytes()) {
		t.Fatalf("%s: replies %q, want %q", when, w.packedReplies.Bytes(), w.plainReplies.Bytes())
	}
	if !reflect.DeepEqual(w.packedEvents, w.plainEvents) {
		t.Fatalf("%s: events %v, want %v", when, w.packedEvents, w.plainEvents)
	}
	if got, want := screenCells(a), screenCells(b); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: cells\n%v\nwant\n%v", when, got, want)
	}
}

func (t *Terminal) decModeSettingLockedForTest() [2]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return [2]int{t.decModeSettingLocked(1049), t.decModeSettingLocked(25)}
}

// Each screen is compacted and read, written more and read, compacted
// again and resized: every read equals a terminal's that never was.
func TestCompactKeepsEveryRead(t *testing.T) {
	var links, colours, bareLinks strings.Builder
	for i := range 300 {
		fmt.Fprintf(&bareLinks, "\x1b]8;;http://y/%d\x1b\\", i)
		fmt.Fprintf(&links, "\x1b]8;;http://x/%d\x1b\\%c", i, 'a'+i%26)
		fmt.Fprintf(&colours, "\x1b[38;2;%d;%d;0m%c", i>>8, i&0xff, 'a'+i%26)
	}
	tests := []struct{ name, prog, more string }{
		{"empty", "", "x"},
		{"the link table full", links.String(), bareLinks.String() + "y" + links.String()},
		{"the style table full", strings.Repeat(colours.String(), 4), colours.String()},
		{"plain text", "hello\r\nworld", " and more\r\n"},
		{"colours and attributes", "\x1b[1;31mred\x1b[0m \x1b[38;5;174mspin\x1b[48;2;1;2;3mrgb\x1b[4:3m curly\x1b[m", "\x1b[7mrev\x1b[m"},
		{"a rule of box-drawing characters", "\x1b[38;5;244m" + strings.Repeat("─", 40) + "\x1b[39m\r\n" + strings.Repeat("=", 40), "\x1b[2;5H\x1b[32m" + strings.Repeat("━", 10)},
		{"runs of blanks and trailing blanks", "a" + strings.Repeat(" ", 20) + "b\r\n\x1b[41m   \x1b[m  \r\n\x1b[44m\x1b[K\x1b[m", "\x1b[3;3H\x1b[1Kz"},
		{"wide characters and clusters", "한글 👍🏽 e\u0301 🇫🇷\r\n日本語" + strings.Repeat("字", 5), "\x1b[1;2H\x1b[2@\x1b[3Pé"},
		{"hyperlinks", "\x1b]8;id=1;http://a.example\alink\x1b]8;;\a plain \x1b]8;;http://b.example\ab\x1b]8;;\a", "\x1b]8;;http://a.example\aagain\x1b]8;;\a"},
		{"the alternate screen", "main\x1b[?1049h\x1b[2;3Halt \x1b[33myellow", "\x1b[?1049lback"},
		{"scroll region and history", "l1\r\nl2\r\nl3\r\nl4\r\nl5\r\nl6\r\nl7\r\nl8\x1b[2;4r\x1b[4;1H\n\nscrolled", "\x1b[r\x1b[S\x1b[T"},
		{"mid-sequence and mid-cluster", "abc\x1b[3", "1mred\x1b[m"},
		{"an OSC string pending", "x\x1b]0;a title", "\a after"},
		{"modes, tabs and saved cursor", "\x1b[?25l\x1b[?7l\x1b[20h\x1b[3g\x1bH\x1b[5;5H\x1b7\x1b[1;1H", "\x1b8\tt\r\x1b[?6h\x1b[2;3r\x1b[Ho"},
		{"queries", "\x1b[c\x1b[6n\x1b]7501;?\a", "\x1b[?1049$p\x1b[5n"},
		{"wrap pending at the last column", strings.Repeat("w", 30), "x"},
		{"the agent-like screen", string(agentLike(100)), string(agentLike(7))},
		{"rows packed at different times", "r1\r\n\x1b[1mr2\x1b[m\r\nr3\r\nr4 é\r\nr5", "\x1b[2;1Hs2\x1b[4;4H\x1b[33mx\x1b[5;1H\x1b[Kt5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newTwin(30, 8, 20)
			w.write([]byte(tc.prog))
			w.check(t, "written")
			w.compactRows(t)
			w.compactRows(t)
			if strings.TrimSpace(w.plain.Snapshot().Text()) != "" && packedRows(w.packed) == 0 {
				t.Fatal("no row packed")
			}
			w.check(t, "rows compacted")
			w.write([]byte(tc.more))
			w.check(t, "rows compacted, written more")
			w.compactRows(t)
			w.compactRows(t)
			w.write([]byte(tc.prog))
			w.check(t, "rows compacted, written again")
			w.compact(t)
			w.check(t, "compacted")
			w.check(t, "read twice while compacted")
			w.compact(t) // a no-op while packed
			w.write([]byte(tc.more))
			w.check(t, "written more")
			w.compact(t)
			w.resize(25, 10)
			w.check(t, "compacted and resized")
			w.compact(t)
			w.write([]byte(tc.prog))
			w.check(t, "compacted and written again")
		})
	}
}

// The packing of a row is short: plain ASCII a byte a cell, runs of one
// cell a few bytes.
func TestPackedRowSize(t *testing.T) {
	ascii := func(s string) []cell {
		l := make([]cell, len(s))
		for i := range s {
			l[i] = cell{r: rune(s[i]), w: 1}
		}
		return l
	}
	rule := make([]cell, 120)
	for i := range rule {
		rule[i] = cell{r: '─', st: 3, w: 1}
	}
	wide := []cell{{r: '한', w: 2}, {}, {r: '글', w: 2}, {}}
	// A transcript row: its text shared, its styles in three runs.
	transcript := "● Read file_12.go and updated the parser, 한글"
	spelt := textCells(nil, transcript, 60)
	for x := 2; x < 6; x++ {
		spelt[x].st = 4
	}
	tests := []struct {
		name string
		row  []cell
		text string
		max  int
	}{
		{"empty", nil, "", 1},
		{"spelt by its text", spelt, transcript, 9},
		{"not spelt by its text", spelt, "● Read", 80},
		{"ASCII", ascii("hello, world"), "", 13},
		{"blanks inside", ascii("a" + strings.Repeat(" ", 50) + "b"), "", 6},
		{"a styled rule", rule, "", 9},
		{"wide characters", wide, "", 13},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := appendPacked(nil, [][]cell{tc.row}, []string{tc.text})
			if len(b) > tc.max {
				t.Errorf("%d bytes (%q), want at most %d", len(b), b, tc.max)
			}
			got := unpackLines(b, 1, 120, []string{tc.text})[0]
			if len(got) != len(tc.row) || (len(got) > 0 && !reflect.DeepEqual(got, tc.row)) {
				t.Errorf("unpacked %v, want %v", got, tc.row)
			}
		})
	}
}

// FuzzCompact is a differential test of packing: random bytes written in
// random chunks to a terminal compacted at random points, resized now and
// then, and to one never compacted; after every chunk every read of both
// is the same.
func FuzzCompact(f *testing.F) {
	f.Add([]byte("\x1b]0;✳ Claude Code\a\x1b[2J\x1b[HDo\x1b[4Gyou\r\x1b[1B❯ 1. Yes\x1b[38;5;244m────────\x1b[m"), uint64(1))
	f.Add([]byte("\x1b[?1049h\x1b[1;3r\x1b[99L\x1b[99M\x1b[99@\x1b[?2048h한👍🏽\x1b]8;;http://x\ay\x1b]8;;\a"), uint64(2))
	f.Add([]byte("l1\r\nl2\r\nl3\r\nl4\r\nl5\r\nl6\r\nl7\x1b[S\x1b[T\x1bM\x1bD\x1b[41m\x1b[K\x1b[2;3r\x1b[H\x1b[M"), uint64(3))
	f.Add([]byte("\x1b[c\x1b[6n\x1b]7501;?\x1b\\e\u0301\x1b[48;2;9;9;9m  \x1b[m\x1bc"), uint64(4))
	if data, err := os.ReadFile("../../testdata/casts/claude-code-2.1.197/session.raw"); err == nil {
		f.Add(data[:min(len(data), 16<<10)], uint64(5))
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		w := newTwin(14, 5, 12)
		for i := 0; i < len(data); {
			n := min(len(data)-i, 1+rng.IntN(24))
			w.write(data[i : i+n])
			i += n
			switch rng.IntN(8) {
			case 0, 1:
				w.compact(t)
			case 2, 5, 6:
				w.compactRows(t)
			case 3:
				w.resize(10+rng.IntN(8), 3+rng.IntN(4))
			case 4:
				w.compact(t)
				w.resize(10+rng.IntN(8), 3+rng.IntN(4))
			}
			w.check(t, fmt.Sprintf("after %d bytes", i))
		}
	})
}

// An idle agent's screen costs a small part of its cells once compacted:
// 100 terminals of 120x32 showing a coding agent's screen (a transcript
// in colours above its spinner, rules and prompt), measured before and
// after Compact, and after CompactRows while a spinner is drawn.
func TestCompactMemory(t *testing.T) {
	const terms = 100
	var transcript strings.Builder
	for i := range 40 {
		fmt.Fprintf(&transcript, "\x1b[1m●\x1b[22m Read \x1b[38;5;246mfile_%d.go\x1b[39m and updated the parser for case %d, keeping the tests green\r\n", i, i)
	}
	data := append([]byte(transcript.String()), agentLike(400)...)
	measure := func(f func()) float64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.GC()
		runtime.ReadMemStats(&after)
		return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / terms
	}
	ts := make([]*Terminal, terms)
	written := measure(func() {
		for i := range ts {
			ts[i] = New(Options{Cols: 120, Rows: 32, ScrollbackLines: 1})
			ts[i].Write(data)
			ts[i].Snapshot()
		}
	})
	saved := -measure(func() {
		for _, term := range ts {
			term.Compact()
		}
	})
	for _, term := range ts {
		if !term.emu.packed {
			t.Fatal("a terminal was not packed")
		}
	}
	t.Logf("a 120x32 terminal with an agent's screen: %.0f bytes; compacted, %.0f bytes (%.0f fewer)", written, written-saved, saved)
	if compacted := written - saved; compacted > written/3 {
		t.Fatalf("compacted, a terminal costs %.0f bytes of its %.0f", compacted, written)
	}

	// The same screens with a spinner drawn on the bottom row between two
	// CompactRows: every other row is packed.
	spin := []byte("\x1b[32;1H\r\x1b[K\x1b[38;5;174m*\x1b[39m working")
	for _, term := range ts {
		term.Write(spin)
	}
	rowsSaved := -measure(func() {
		for _, term := range ts {
			term.CompactRows()
			term.Write(spin)
			term.CompactRows()
			term.Write(spin)
		}
	})
	for _, term := range ts {
		if term.emu.packed || term.emu.main.rowsPacked() == 0 {
			t.Fatalf("packed whole %v, %d rows packed", term.emu.packed, term.emu.main.rowsPacked())
		}
	}
	t.Logf("drawing a spinner, rows compacted: %.0f bytes (%.0f fewer)", written-rowsSaved, rowsSaved)
	if compacted := written - rowsSaved; compacted > written/2 {
		t.Fatalf("rows compacted, a terminal costs %.0f bytes of its %.0f", compacted, written)
	}
	runtime.KeepAlive(ts)
}

// BenchmarkCompactAndWake packs an agent's screen and writes a spinner
// frame to it: what a pane that goes idle and wakes pays once.
func BenchmarkCompactAndWake(b *testing.B) {
	term := New(Options{Cols: 120, Rows: 32})
	defer term.Close()
	term.Write(agentLike(400))
	frame := agentLike(1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		term.Compact()
		term.Write(frame)
	}
}

// printedLines is n lines a program printed.
func printedLines(n int) string {
	var out strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&out, "line %d of the scrollback\r\n", i)
	}
	return out.String()
}

// spinning is a terminal whose program printed history and then drew a
// spinner on its last row, four frames, the terminal read and its rows
// compacted before each, as a pane's settle does.
func spinning(cols, rows int, history string) *Terminal {
	t := New(Options{Cols: cols, Rows: rows, ScrollbackLines: 500})
	t.Write([]byte(history))
	for j := range 4 {
		t.Snapshot()
		t.CompactRows()
		fmt.Fprintf(t, "\r\x1b[K%c working (%d)", `|/-\`[j], j)
	}
	t.Snapshot()
	return t
}

// A terminal that shows plain text (a shell, a spinner) makes neither the
// style cache nor the tables' indexes: 100 terminals of 80x24 given 200
// lines of history and a spinner redrawn on its last row, the heap after a
// collection, each terminal's rows compacted between redraws as a pane's
// are.
func TestPlainTerminalHeap(t *testing.T) {
	const terms = 100
	history := printedLines(200)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ts := make([]*Terminal, terms)
	for i := range ts {
		ts[i] = spinning(80, 24, history)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / terms
	t.Logf("an 80x24 terminal, 200 lines of history, a spinner: %.0f bytes", per)
	for _, term := range ts {
		if term.emu.styleCache != nil || term.emu.styleIdx != nil || term.emu.linkIdx != nil {
			t.Fatal("a plain terminal made its style cache or an index")
		}
		if got := term.Snapshot().Lines[23]; !strings.HasPrefix(got, `\ working (3)`) {
			t.Fatalf("the last row reads %q", got)
		}
	}
	// 200 rows of history are ~6 KB (text and offsets), the screen's rows
	// and their texts ~3 KB, the emulator and parser ~2 KB.
	if per > 12<<10 {
		t.Fatalf("a plain terminal costs %.0f bytes; at most %d", per, 12<<10)
	}
}

// A terminal of the daemon's size (120x32) whose program printed 200 lines
// and then draws a spinner: once its history settled and its other rows
// are packed one by one, it costs what those rows' packings take in one
// buffer, not a slice a row (24 bytes each in a table, and an allocation
// of a few bytes each: ~0.6 KB a terminal more), and reads the same.
func TestSpinnerTerminalHeap(t *testing.T) {
	const terms = 200
	history := printedLines(200)
	heap := func() float64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC() // the compressors' pool emptied too
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc)
	}
	before := heap()
	ts := make([]*Terminal, terms)
	for i := range ts {
		ts[i] = spinning(120, 32, history)
	}
	per := (heap() - before) / terms
	t.Logf("a 120x32 terminal, 200 lines of history, a spinner: %.0f bytes", per)
	for _, term := range ts {
		if n := term.PackedRows(); n != 31 {
			t.Fatalf("%d rows packed, want the 31 the spinner does not draw", n)
		}
		lines := term.Snapshot().Lines
		if lines[0] != "line 170 of the scrollback" || lines[30] != "line 200 of the scrollback" || lines[31] != `\ working (3)` {
			t.Fatalf("the screen reads %q ... %q", lines[:2], lines[30:])
		}
	}
	// The history compressed ~1.6 KB, the screen's tables of rows and
	// texts ~2 KB, the rows' texts 1 KB, the emulator and parser ~1.5 KB,
	// the packed rows 0.45 KB. Their packing as a slice a row: 7 KB.
	if per > 6700 {
		t.Fatalf("a spinner's terminal costs %.0f bytes; at most 6700", per)
	}
}

// An idle terminal's history is kept compressed, and reads the same: its
// rows, a checkpoint and what later output adds to it. 50 terminals with
// 500 rows of a transcript each, the heap after a collection before and
// after Compact.
func TestIdleHistoryCompressed(t *testing.T) {
	const terms = 50
	var out strings.Builder
	for i := range 600 {
		fmt.Fprintf(&out, "\x1b[1m●\x1b[22m Read file_%d.go and updated the parser for case %d, keeping the tests green\r\n", i, i%7)
	}
	heap := func() float64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC() // the compressors' pool emptied too
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc)
	}
	ts := make([]*Terminal, terms)
	for i := range ts {
		ts[i] = New(Options{Cols: 120, Rows: 32, ScrollbackLines: 500})
		ts[i].Write([]byte(out.String()))
	}
	history := ts[0].Scrollback(0)
	checkpoint, ok := ts[0].Checkpoint()
	if !ok || len(history) != 500 {
		t.Fatalf("checkpoint %v, %d rows of history", ok, len(history))
	}
	before := heap()
	for _, term := range ts {
		term.Compact()
	}
	compacted := heap()
	if ts[0].emu.sb.z == nil {
		t.Fatal("an idle terminal's history is not compressed")
	}
	size, zsize := ts[0].emu.sb.size(), len(ts[0].emu.sb.z)
	// The same terminals with their history's text back: what the
	// compression saves.
	for _, term := range ts[1:] {
		term.emu.sb.open()
	}
	saved := (heap() - compacted) / (terms - 1)
	t.Logf("500 rows of history, %d bytes of text, %d compressed: %.0f bytes fewer a terminal (%.0f with the screen packed)", size, zsize, saved, (before-compacted)/terms)
	if saved < float64(size)/2 {
		t.Fatalf("compressing the history saved %.0f bytes of %d", saved, size)
	}
	if got := ts[0].Scrollback(0); !slices.Equal(got, history) {
		t.Fatalf("the history read compressed differs: %d rows, first %q", len(got), got[0])
	}
	if got, _ := ts[0].Checkpoint(); !bytes.Equal(got, checkpoint) {
		t.Fatal("the checkpoint of a compacted terminal differs")
	}
	if ts[0].emu.sb.z == nil {
		t.Fatal("a read left the history uncompressed")
	}
	// Output after: the history goes on from where it was.
	ts[0].Write([]byte(strings.Repeat("after\r\n", 40)))
	got := ts[0].Scrollback(0)
	if len(got) != 500 || !slices.Equal(got[:460], history[40:]) {
		t.Fatalf("history after more output: %d rows, first %q (want %q)", len(got), got[0], history[40])
	}
	if ts[0].emu.sb.z != nil {
		t.Fatal("a write left the history compressed")
	}
}
