package term

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The differential test: corral's screen against the x/vt reference, on
// programs made of the sequences agents send. After every chunk both must
// show the same screen, cursor, title, modes, scrollback, colours and
// rendering, and have sent the same replies and events.

// agentVocab returns one token of agent-like output, chosen by r.
func agentVocab(r *rand.Rand, cols, rows int) string {
	n := func(hi int) int { return r.IntN(hi) + 1 }
	words := []string{"Read", "file_12.go", "and", "updated", "the", "parser", "●", "⏺", "✻", "✶", "✳", "·", "❯", "─────", "│", "╭─╮", "한글", "👍", "👍🏽", "e\u0301", "👨\u200d👩\u200d👧", "🇺🇸", "⏸", "…", "✔", "a\u0308\u0301", "\u200b", "ｘ", " ", "  ", "x"}
	switch r.IntN(40) {
	case 0, 1, 2, 3, 4, 5:
		return words[r.IntN(len(words))]
	case 6:
		return strings.Repeat("abcdefghij", n(15))
	case 7:
		return "\r\n"
	case 8:
		return []string{"\r", "\n", "\b", "\t", "\a", "\x0b", "\x0c"}[r.IntN(7)]
	case 9:
		return fmt.Sprintf("\x1b[%d%c", r.IntN(cols+3), "ABCDEFGIXPS@LMTZabde`"[r.IntN(21)])
	case 10:
		return fmt.Sprintf("\x1b[%d;%dH", r.IntN(rows+3), r.IntN(cols+3))
	case 11:
		return fmt.Sprintf("\x1b[%d;%df", r.IntN(rows+2), r.IntN(cols+2))
	case 12:
		return fmt.Sprintf("\x1b[%dJ", r.IntN(4))
	case 13:
		return fmt.Sprintf("\x1b[%dK", r.IntN(3))
	case 14, 15, 16:
		sgrs := []string{"0", "1", "2", "3", "4", "7", "22", "23", "24", "27", "31", "39", "42", "49", "91", "103", "38;5;174", "48;5;236", "38;2;10;20;30", "48;2;1;2;3", "4:3", "58;5;3", "1;38;5;246", "", "9", "5", "38:2::1:2:3"}
		return "\x1b[" + sgrs[r.IntN(len(sgrs))] + "m"
	case 17:
		t := r.IntN(rows) + 1
		return fmt.Sprintf("\x1b[%d;%dr", t, t+r.IntN(rows+2))
	case 18:
		return "\x1b[r"
	case 19:
		return []string{"\x1b7", "\x1b8", "\x1b[s", "\x1bM", "\x1bD", "\x1bH", "\x1b[g", "\x1b[3g", "\x1b[?5W", "\x1bE", "\x1b=", "\x1b>"}[r.IntN(12)]
	case 20:
		modes := []string{"?25", "?7", "?6", "?1049", "?1047", "?1048", "?2004", "?2026", "20", "4", "?1", "?1000", "?1006"}
		hl := "hl"[r.IntN(2)]
		return "\x1b[" + modes[r.IntN(len(modes))] + string(hl)
	case 21:
		return "\x1b]0;✳ Claude Code\a"
	case 22:
		return []string{"\x1b]2;a;b\x1b\\", "\x1b]7501;state=working\x1b\\", "\x1b]7501;?\a", "\x1b]9;4;1;40\a", "\x1b]133;D;0\a", "\x1b]777;notify;T;B\a", "\x1b]99;;hi\x1b\\", "\x1b]9;done\a", "\x1b]11;?\a", "\x1b]1;icon\a"}[r.IntN(10)]
	case 23:
		return []string{"\x1b]8;;http://x\x1b\\", "\x1b]8;id=1;http://y\a", "\x1b]8;;\x1b\\"}[r.IntN(3)]
	case 24:
		return []string{"\x1b[c", "\x1b[>c", "\x1b[6n", "\x1b[5n", "\x1b[?6n", "\x1b[?2026$p", "\x1b[?1049$p", "\x1b[?25$p", "\x1b[4$p", "\x1b[>0q", "\x1b[?u"}[r.IntN(11)]
	case 25:
		return []string{"\x1b(0lqqk\x1b(B", "\x1b(0x\x1b(B", "\x1b)0\x0e", "\x0f", "\x1b(A$"}[r.IntN(5)]
	case 26:
		return fmt.Sprintf("x\x1b[%db", r.IntN(cols*2))
	case 27:
		if r.IntN(10) == 0 {
			return "\x1bc"
		}
		return "\x1b[?69h"
	case 28:
		l := r.IntN(cols) + 1
		return fmt.Sprintf("\x1b[%d;%ds", l, l+r.IntN(cols-l+1))
	case 29:
		return "\x1b[?69l"
	case 30:
		// Spinner frame, as agents redraw it.
		return fmt.Sprintf("\x1b[%d;1H\x1b[38;5;174m%s\x1b[39m Working… (%ds · esc)\x1b[K", r.IntN(rows)+1, words[7+r.IntN(4)], r.IntN(60))
	case 31:
		return "\x1bP$q\x1b\\\x1b_G;x\x1b\\\x1b^pm\x1b\\"
	case 32:
		// An erase, insert, delete or scroll in a background colour.
		return fmt.Sprintf("\x1b[48;5;%dm\x1b[%d%c\x1b[49m", 16+r.IntN(8), r.IntN(4), "XK@PJLMST"[r.IntN(9)])
	case 33:
		// Printing at the right edge, where rows end.
		return fmt.Sprintf("\x1b[%dG%s", cols-r.IntN(3), words[r.IntN(len(words))])
	case 34:
		// Margins set and a row or cell edit inside them.
		l := r.IntN(cols) + 1
		return fmt.Sprintf("\x1b[?69h\x1b[%d;%ds\x1b[%d;%dH\x1b[%d%c", l, l+r.IntN(cols-l+1), r.IntN(rows)+1, r.IntN(cols)+1, r.IntN(4), "LM@PSTX"[r.IntN(7)])
	}
	return words[r.IntN(len(words))] + " "
}

type diffPair struct {
	ours      *Terminal
	ref       *refTerminal
	oursR     bytes.Buffer
	refR      bytes.Buffer
	oursE     []Event
	refE      []Event
	cols, rws int
}

func newDiffPair(cols, rows, sb int) *diffPair {
	d := &diffPair{cols: cols, rws: rows}
	d.ours = New(Options{Cols: cols, Rows: rows, ScrollbackLines: sb, Replies: &d.oursR, OnEvent: func(e Event) { d.oursE = append(d.oursE, e) }})
	d.ref = newRef(Options{Cols: cols, Rows: rows, ScrollbackLines: sb, Replies: &d.refR, OnEvent: func(e Event) { d.refE = append(d.refE, e) }})
	return d
}

func (d *diffPair) close() { d.ours.Close(); d.ref.Close() }

// compare reports the first difference, or "".
func (d *diffPair) compare() string {
	a, b := d.ours.Snapshot(), d.ref.Snapshot()
	if !reflect.DeepEqual(a, b) {
		for i := range a.Lines {
			if i < len(b.Lines) && a.Lines[i] != b.Lines[i] {
				return fmt.Sprintf("row %d:\n ours %q\n  ref %q", i, a.Lines[i], b.Lines[i])
			}
		}
		a.Lines, b.Lines = nil, nil
		return fmt.Sprintf("snapshot:\n ours %+v\n  ref %+v", a, b)
	}
	if x, y := d.oursR.String(), d.refR.String(); x != y {
		return fmt.Sprintf("replies:\n ours %q\n  ref %q", x, y)
	}
	if !reflect.DeepEqual(d.oursE, d.refE) {
		return fmt.Sprintf("events:\n ours %+v\n  ref %+v", d.oursE, d.refE)
	}
	if x, y := d.ours.Scrollback(0), d.ref.Scrollback(0); strings.Join(x, "\n") != strings.Join(y, "\n") {
		return fmt.Sprintf("scrollback:\n ours %q\n  ref %q", x, y)
	}
	if x, y := d.ours.StyledRows(), d.ref.StyledRows(); !reflect.DeepEqual(x, y) {
		for i := range x {
			if !reflect.DeepEqual(x[i], y[i]) {
				return fmt.Sprintf("styled row %d:\n ours %+v\n  ref %+v", i, x[i], y[i])
			}
		}
	}
	if x, y := d.ours.ANSI(), d.ref.ANSI(); x != y {
		return fmt.Sprintf("ANSI:\n ours %q\n  ref %q", x, y)
	}
	return ""
}

// runDiff builds a program from seed and feeds it to both, comparing after
// every chunk. It returns the program and the first difference.
func runDiff(seed uint64, tokens int) (string, string) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	cols, rows := 8+r.IntN(40), 3+r.IntN(12)
	d := newDiffPair(cols, rows, 5+r.IntN(30))
	defer d.close()
	var prog strings.Builder
	for range tokens {
		if r.IntN(60) == 0 && !d.ref.emu.IsAltScreen() {
			cols, rows = 8+r.IntN(40), 3+r.IntN(12)
			d.ours.Resize(cols, rows)
			d.ref.Resize(cols, rows)
			fmt.Fprintf(&prog, "<resize %dx%d>", cols, rows)
		}
		tok := agentVocab(r, cols, rows)
		prog.WriteString(tok)
		// Split the token's bytes across writes now and then.
		if len(tok) > 1 && r.IntN(4) == 0 {
			cut := 1 + r.IntN(len(tok)-1)
			d.ours.Write([]byte(tok[:cut]))
			d.ref.Write([]byte(tok[:cut]))
			tok = tok[cut:]
		}
		d.ours.Write([]byte(tok))
		d.ref.Write([]byte(tok))
		if n, _ := d.ref.Panics(); n > 0 {
			// The reference broke on this input (and was replaced); past
			// here it is no reference.
			return prog.String(), ""
		}
		if r.IntN(3) == 0 {
			if diff := d.compare(); diff != "" {
				return prog.String(), diff
			}
		}
	}
	return prog.String(), d.compare()
}

// raceBuild is set under -race, where the reference is slow.
var raceBuild bool

func TestDifferentialAgainstReference(t *testing.T) {
	t.Parallel()
	programs := 600
	if testing.Short() || raceBuild {
		programs = 60
	}
	first := uint64(0)
	// CORRAL_DIFF_SEEDS=FIRST:COUNT runs a longer sweep.
	if v := os.Getenv("CORRAL_DIFF_SEEDS"); v != "" {
		a, b, _ := strings.Cut(v, ":")
		f, _ := strconv.Atoi(a)
		n, _ := strconv.Atoi(b)
		first, programs = uint64(f), n
	}
	// Four runs of a quarter of the seeds each, at once: the programs are
	// independent, and the whole sweep took 5.4 s of one core.
	const parts = 4
	for part := range uint64(parts) {
		t.Run(fmt.Sprintf("part %d", part+1), func(t *testing.T) {
			t.Parallel()
			for seed := first + part; seed < first+uint64(programs); seed += parts {
				if prog, diff := runDiff(seed, 200); diff != "" {
					t.Fatalf("seed %d: %s\nprogram: %q", seed, diff, prog)
				}
			}
		})
	}
}

// FuzzDifferential lets the fuzzer pick seeds and program lengths.
func FuzzDifferential(f *testing.F) {
	f.Add(uint64(1), uint16(100))
	f.Fuzz(func(t *testing.T, seed uint64, n uint16) {
		if prog, diff := runDiff(seed, int(n%2000)); diff != "" {
			t.Fatalf("%s\nprogram: %q", diff, prog)
		}
	})
}
