package term

import (
	"fmt"
	"strings"
	"testing"
)

// TestSequences is a table of escape sequences by category, in the manner
// of vttest: each case draws on a 10x4 screen and states the rows and the
// cursor. Every case runs on corral's screen and on the x/vt reference;
// where the reference departs from xterm, the case says so, and corral
// follows the reference so that screens and rules stay as they were.
func TestSequences(t *testing.T) {
	tests := []struct {
		cat, name string
		input     string
		lines     []string // rows from the top; unlisted rows are empty
		cursor    [2]int
		hidden    bool
	}{
		{"cursor", "CUU stops at the top", "\x1b[3;3H\x1b[10Ax", []string{"  x"}, [2]int{3, 0}, false},
		{"cursor", "CUD stops at the bottom", "\x1b[10Bx", []string{"", "", "", "x"}, [2]int{1, 3}, false},
		{"cursor", "CUF stops at the right", "\x1b[20Cx", []string{"         x"}, [2]int{9, 0}, false},
		{"cursor", "CUB stops at the left", "abc\x1b[10Dx", []string{"xbc"}, [2]int{1, 0}, false},
		{"cursor", "CUP is one-based", "\x1b[2;5Hx", []string{"", "    x"}, [2]int{5, 1}, false},
		{"cursor", "CUP 0;0 is 1;1", "\x1b[0;0Hx", []string{"x"}, [2]int{1, 0}, false},
		{"cursor", "HVP", "\x1b[3;2fx", []string{"", "", " x"}, [2]int{2, 2}, false},
		{"cursor", "CHA", "abc\x1b[6Gx", []string{"abc  x"}, [2]int{6, 0}, false},
		{"cursor", "VPA", "ab\x1b[3dx", []string{"ab", "", "  x"}, [2]int{3, 2}, false},
		{"cursor", "HPR", "a\x1b[3ax", []string{"a   x"}, [2]int{5, 0}, false},
		{"cursor", "CNL", "ab\x1b[2Ex", []string{"ab", "", "x"}, [2]int{1, 2}, false},
		{"cursor", "CPL", "\x1b[3;5H\x1b[2Fx", []string{"x"}, [2]int{1, 0}, false},
		{"cursor", "BS", "ab\bx", []string{"ax"}, [2]int{2, 0}, false},
		{"cursor", "DECSC and DECRC", "ab\x1b7\x1b[3;3Hx\x1b8y", []string{"aby", "", "  x"}, [2]int{3, 0}, false},
		{"erase", "ED 0 from the cursor", "aaaa\r\nbbbb\r\ncccc\x1b[2;3H\x1b[J", []string{"aaaa", "bb"}, [2]int{2, 1}, false},
		// xterm erases the cursor's row up to the cursor only.
		{"erase", "ED 1 erases the cursor's whole row (reference)", "aaaa\r\nbbbb\r\ncccc\x1b[2;3H\x1b[1J", []string{"", "", "cccc"}, [2]int{2, 1}, false},
		{"erase", "ED 2", "aaaa\r\nbb\x1b[2J", nil, [2]int{2, 1}, false},
		{"erase", "EL 1", "abcdef\x1b[3G\x1b[1K", []string{"   def"}, [2]int{2, 0}, false},
		{"erase", "EL 2", "abcdef\x1b[3G\x1b[2K", nil, [2]int{2, 0}, false},
		{"erase", "ECH", "abcdef\x1b[2G\x1b[3X", []string{"a   ef"}, [2]int{1, 0}, false},
		{"insert/delete", "ICH", "abcdef\x1b[2G\x1b[2@", []string{"a  bcdef"}, [2]int{1, 0}, false},
		{"insert/delete", "ICH pushes off the edge", "abcdefghij\x1b[1G\x1b[3@", []string{"   abcdefg"}, [2]int{0, 0}, false},
		{"insert/delete", "DCH", "abcdef\x1b[2G\x1b[2P", []string{"adef"}, [2]int{1, 0}, false},
		{"insert/delete", "IL", "a\r\nb\r\nc\x1b[2;1H\x1b[L", []string{"a", "", "b", "c"}, [2]int{0, 1}, false},
		{"insert/delete", "DL", "a\r\nb\r\nc\x1b[1;1H\x1b[M", []string{"b", "c"}, [2]int{0, 0}, false},
		{"insert/delete", "IL below the region does nothing", "a\x1b[2;3r\x1b[4;1H\x1b[L", []string{"a"}, [2]int{0, 3}, false},
		{"scroll region", "LF at the bottom margin scrolls the region only", "1\r\n2\r\n3\r\n4\x1b[2;3r\x1b[3;1H\nX", []string{"1", "3", "X", "4"}, [2]int{1, 2}, false},
		{"scroll region", "RI at the top margin scrolls down", "1\r\n2\r\n3\r\n4\x1b[2;3r\x1b[2;1H\x1bMX", []string{"1", "X", "2", "4"}, [2]int{1, 1}, false},
		{"scroll region", "SU", "1\r\n2\r\n3\x1b[S", []string{"2", "3"}, [2]int{1, 2}, false},
		{"scroll region", "SD", "1\r\n2\r\n3\x1b[T", []string{"", "1", "2", "3"}, [2]int{1, 2}, false},
		{"scroll region", "LF at the screen bottom scrolls", "1\r\n2\r\n3\r\n4\r\n5", []string{"2", "3", "4", "5"}, [2]int{1, 3}, false},
		{"origin", "DECOM homes into the region", "\x1b[2;3r\x1b[?6h\x1b[Hx", []string{"", "x"}, [2]int{1, 1}, false},
		{"origin", "DECOM confines CUP", "\x1b[2;3r\x1b[?6h\x1b[9;1Hx", []string{"", "", "x"}, [2]int{1, 2}, false},
		{"autowrap", "DECAWM wraps", "abcdefghijKL", []string{"abcdefghij", "KL"}, [2]int{2, 1}, false},
		{"autowrap", "without DECAWM the last column is overwritten", "\x1b[?7labcdefghijKL", []string{"abcdefghiL"}, [2]int{9, 0}, false},
		{"autowrap", "CR cancels the pending wrap", "abcdefghij\rX", []string{"Xbcdefghij"}, [2]int{1, 0}, false},
		{"autowrap", "LNM: LF also returns", "\x1b[20ha\nb", []string{"a", "b"}, [2]int{1, 1}, false},
		{"tabs", "HT", "a\tb", []string{"a       b"}, [2]int{9, 0}, false},
		{"tabs", "HTS", "\x1b[4G\x1bH\r\tx", []string{"   x"}, [2]int{4, 0}, false},
		{"tabs", "TBC 3 clears every stop", "\x1b[3g\tx", []string{"         x"}, [2]int{9, 0}, false},
		{"tabs", "CBT", "\x1b[10G\x1b[Zx", []string{"        x"}, [2]int{9, 0}, false},
		{"charsets", "DEC special graphics", "\x1b(0lqk\x1b(Bq", []string{"┌─┐q"}, [2]int{4, 0}, false},
		{"charsets", "UK", "\x1b(A$\x1b(B$", []string{"£$"}, [2]int{2, 0}, false},
		{"unicode", "wide characters take two columns", "한글x", []string{"한글x"}, [2]int{5, 0}, false},
		// xterm wraps a wide character that does not fit; the reference
		// leaves a blank and wraps the next character.
		{"unicode", "a wide character at the last column (reference)", "abcdefghi한x", []string{"abcdefghi", "x"}, [2]int{1, 1}, false},
		{"unicode", "writing on half a wide character blanks it", "한글\x1b[2Gx", []string{" x글"}, [2]int{2, 0}, false},
		{"unicode", "a combining mark joins its base", "e\u0301x", []string{"e\u0301x"}, [2]int{2, 0}, false},
		{"unicode", "a ZWJ sequence is one wide cell", "👨\u200d👩\u200d👧x", []string{"👨\u200d👩\u200d👧x"}, [2]int{3, 0}, false},
		{"unicode", "an emoji with a skin tone", "👍🏽x", []string{"👍🏽x"}, [2]int{3, 0}, false},
		{"unicode", "a flag", "🇺🇸x", []string{"🇺🇸x"}, [2]int{3, 0}, false},
		{"modes", "DECTCEM hides the cursor", "\x1b[?25l", nil, [2]int{0, 0}, true},
		{"modes", "the alternate screen leaves the main one as it was", "main\x1b[?1049halt\x1b[?1049l", []string{"main"}, [2]int{4, 0}, false},
		{"repeat", "REP", "ab\x1b[3b", []string{"abbbb"}, [2]int{5, 0}, false},
		{"reset", "RIS", "abc\x1b[?25l\x1b[2;3r\x1bc", nil, [2]int{0, 0}, false},
	}
	for _, tt := range tests {
		t.Run(tt.cat+"/"+tt.name, func(t *testing.T) {
			want := make([]string, 4)
			copy(want, tt.lines)
			check := func(who string, s Snapshot) {
				if strings.Join(s.Lines, "|") != strings.Join(want, "|") {
					t.Errorf("%s: rows %q, want %q", who, s.Lines, want)
				}
				if got := [2]int{s.CursorX, s.CursorY}; got != tt.cursor {
					t.Errorf("%s: cursor %v, want %v", who, got, tt.cursor)
				}
				if s.CursorHidden != tt.hidden {
					t.Errorf("%s: cursor hidden %v", who, s.CursorHidden)
				}
			}
			ours := New(Options{Cols: 10, Rows: 4})
			defer ours.Close()
			ours.Write([]byte(tt.input))
			check("corral", ours.Snapshot())
			ref := newRef(Options{Cols: 10, Rows: 4})
			defer ref.Close()
			ref.Write([]byte(tt.input))
			check("reference", ref.Snapshot())
		})
	}
}

// SGR colours and attributes, as the web board draws them.
func TestSequencesSGR(t *testing.T) {
	tests := []struct {
		input string
		want  Run
	}{
		{"\x1b[31mx", Run{Text: "x", FG: "#800000"}},
		{"\x1b[91mx", Run{Text: "x", FG: "#ff0000"}},
		{"\x1b[38;5;174mx", Run{Text: "x", FG: "#d78787"}},
		{"\x1b[38;2;1;2;3mx", Run{Text: "x", FG: "#010203"}},
		{"\x1b[38:2::1:2:3mx", Run{Text: "x", FG: "#010203"}},
		{"\x1b[48;5;4mx", Run{Text: "x", BG: "#000080"}},
		{"\x1b[1;2;3;4;7mx", Run{Text: "x", Bold: true, Faint: true, Italic: true, Underline: true, Reverse: true}},
		{"\x1b[4:3mx", Run{Text: "x", Underline: true}},
		{"\x1b[1;31m\x1b[22;39mx", Run{Text: "x"}},
		{"\x1b[1;31m\x1b[mx", Run{Text: "x"}},
	}
	for _, tt := range tests {
		for _, who := range []string{"corral", "reference"} {
			var rows [][]Run
			if who == "corral" {
				term := New(Options{Cols: 10, Rows: 2})
				term.Write([]byte(tt.input))
				rows = term.StyledRows()
				term.Close()
			} else {
				term := newRef(Options{Cols: 10, Rows: 2})
				term.Write([]byte(tt.input))
				rows = term.StyledRows()
				term.Close()
			}
			if len(rows[0]) != 1 || rows[0][0] != tt.want {
				t.Errorf("%s %q: runs %+v, want %+v", who, tt.input, rows[0], tt.want)
			}
		}
	}
}

// A program printing a new colour, cluster or link per cell cannot grow
// the screen's tables past a small multiple of its cells, and the screen
// stays what the reference shows.
func TestTablesStayBounded(t *testing.T) {
	var b strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&b, "\x1b[38;2;%d;%d;%dm%c", i>>16, (i>>8)&0xff, i&0xff, 'a'+i%26)
		if i%7 == 0 {
			fmt.Fprintf(&b, "\x1b]8;;http://x/%d\x1b\\", i)
		}
		if i%5 == 0 {
			b.WriteString(string(rune('a'+i%26)) + string(rune(0x300+i%112)))
		}
		if i%11 == 0 {
			b.WriteString("\r\n")
		}
	}
	d := newDiffPair(10, 4, 20)
	defer d.close()
	d.ours.Write([]byte(b.String()))
	d.ref.Write([]byte(b.String()))
	if diff := d.compare(); diff != "" {
		t.Fatal(diff)
	}
	e := d.ours.emu
	if len(e.styles) > e.tableLimit() || len(e.clusters) > e.tableLimit() || len(e.links) > maxLinks {
		t.Fatalf("tables: %d styles, %d clusters, %d links", len(e.styles), len(e.clusters), len(e.links))
	}
}

// A megabyte of combining marks does not become one cell of a megabyte.
func TestCombiningFloodIsCut(t *testing.T) {
	term := New(Options{Cols: 10, Rows: 4})
	defer term.Close()
	term.Write([]byte("e" + strings.Repeat("\u0301", 1<<19) + "x"))
	for _, c := range term.emu.clusters {
		if len(c) > maxPending+4 {
			t.Fatalf("a cluster of %d bytes", len(c))
		}
	}
	if s := term.Snapshot(); !strings.HasSuffix(s.Lines[0], "x") {
		t.Fatalf("row %q", s.Lines[0])
	}
}
