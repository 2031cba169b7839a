package term

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestCheckpoint writes each stream to a terminal, redraws a second one
// (fresh, or full of other output) from its checkpoint, and checks that
// both show the same history, screen, colours and cursor, then again
// after the same further bytes: these act on the copy as on the first.
func TestCheckpoint(t *testing.T) {
	var lines strings.Builder
	for i := range 60 {
		fmt.Fprintf(&lines, "line %d \x1b[3%dmcolour\x1b[0m\r\n", i, i%8)
	}
	cases := []struct {
		name, before, after string
	}{
		{"empty", "", "hello"},
		{"history and screen", lines.String() + "$ ", "ls\r\nmore\r\n"},
		{"pen carries on", "\x1b[1;31mred and bold", " still red\x1b[0m plain"},
		{"background pen erases", "\x1b[44mblue", "\x1b[2K\r\n\x1b[K"},
		{"blank rows kept in history", "a\r\n\r\n\r\nb\r\n" + strings.Repeat("x\r\n", 30), "y\r\n"},
		{"scroll region", lines.String() + "\x1b[5;10r\x1b[10;1H", "one\r\ntwo\r\nthree\r\nfour\r\nfive\r\nsix\r\nseven"},
		{"saved cursor", "\x1b[3;7H\x1b[32m\x1b7\x1b[0m\x1b[20;1Hbottom", "\x1b8green at 3,7"},
		{"hidden cursor", "\x1b[?25lhidden", "\x1b[?25h"},
		{"alternate screen", lines.String() + "\x1b[?1049h\x1b[2;3Hfull \x1b[7mscreen\x1b[0m", "\x1b[?1049lback"},
		{"alternate screen, hidden", "main\x1b[?1049h\x1b[?25lalt", "x\x1b[?1049l"},
		{"no autowrap", "\x1b[?7l" + strings.Repeat("w", 100), "z"},
		{"wide and combining", "宽字符 e\u0301 🇫🇷", "\r\n宽"},
		{"title", "\x1b]2;my title\aabc", ""},
		{"hyperlink", "\x1b]8;;http://x/\alink\x1b]8;;\a after", ""},
		{"hyperlink open", "\x1b]8;id=1;http://x/\aopen link", " more\x1b]8;;\a after"},
		{"hyperlink saved", "\x1b]8;;http://x/\a\x1b7\x1b]8;;\aplain", "\x1b8linked"},
		{"true colour", "\x1b[38;2;1;2;3;48;5;200mtc\x1b[4:3;58;5;9mcurl", "more"},
	}
	for _, c := range cases {
		for _, dirty := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/dirty=%v", c.name, dirty), func(t *testing.T) {
				a := New(Options{Cols: 40, Rows: 20, ScrollbackLines: 50})
				a.Write([]byte(c.before))
				cp, ok := a.Checkpoint()
				if !ok {
					t.Fatal("no checkpoint")
				}
				b := New(Options{Cols: 40, Rows: 20, ScrollbackLines: 50})
				if dirty {
					b.Write([]byte(lines.String() + "\x1b[?6h\x1b7\x1b[?1049h\x1b[3;8r\x1b[?25l\x1b[41m\x1b(0\x1b7junk\x1b]2;old title\a\x1b[?7l"))
				}
				b.Write(cp)
				sameTerminals(t, "after the checkpoint", a, b)
				a.Write([]byte(c.after))
				b.Write([]byte(c.after))
				sameTerminals(t, "after more output", a, b)
			})
		}
	}
}

func sameTerminals(t *testing.T, when string, a, b *Terminal) {
	t.Helper()
	if sa, sb := a.Snapshot(), b.Snapshot(); !reflect.DeepEqual(sa, sb) {
		t.Errorf("%s: screens differ:\n%#v\n%#v", when, sa, sb)
	}
	if ha, hb := a.Scrollback(0), b.Scrollback(0); !reflect.DeepEqual(ha, hb) {
		t.Errorf("%s: history differs:\n%q\n%q", when, ha, hb)
	}
	if ra, rb := a.StyledRows(), b.StyledRows(); !reflect.DeepEqual(ra, rb) {
		t.Errorf("%s: colours differ:\n%v\n%v", when, ra, rb)
	}
	if aa, ab := a.ANSI(), b.ANSI(); aa != ab {
		t.Errorf("%s: ANSI differs:\n%q\n%q", when, aa, ab)
	}
}

// TestCheckpointRefused: a terminal inside a sequence or in a state a
// checkpoint does not reproduce has none, until it leaves it.
func TestCheckpointRefused(t *testing.T) {
	for _, c := range []struct{ name, in, out string }{
		{"inside a CSI", "\x1b[3", "1m"},
		{"inside an OSC", "\x1b]2;ti", "tle\a"},
		{"inside a character", "\xe5\xae", "\xbd"},
		{"wrap pending", strings.Repeat("x", 40), "y"},
		{"origin mode", "\x1b[?6h", "\x1b[?6l"},
		{"a character set", "\x1b(0", "\x1b(B"},
		{"tab stops", "\x1b[3g", "\x1bc"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := New(Options{Cols: 40, Rows: 5})
			a.Write([]byte(c.in))
			if _, ok := a.Checkpoint(); ok {
				t.Fatal("a checkpoint in that state")
			}
			a.Write([]byte(c.out))
			if _, ok := a.Checkpoint(); !ok {
				t.Fatal("no checkpoint after leaving that state")
			}
		})
	}
}

// TestCheckpointKeepsReports: replaying a checkpoint is no full reset,
// which would void the program's status reports.
func TestCheckpointKeepsReports(t *testing.T) {
	a := New(Options{Cols: 40, Rows: 5})
	a.Write([]byte("\x1bcsome output\x1b[?1049h"))
	cp, ok := a.Checkpoint()
	if !ok {
		t.Fatal("no checkpoint")
	}
	var kinds []EventKind
	b := New(Options{Cols: 40, Rows: 5, OnEvent: func(ev Event) { kinds = append(kinds, ev.Kind) }})
	b.Write(cp)
	for _, k := range kinds {
		if k == EventReset {
			t.Fatalf("the checkpoint reset the terminal: %q", cp)
		}
	}
}

// BenchmarkCheckpoint: a terminal of 120×40 with its 500 rows of history
// full, and coloured rows on screen.
func BenchmarkCheckpoint(b *testing.B) {
	a := New(Options{Cols: 120, Rows: 40})
	for i := range 600 {
		fmt.Fprintf(a, "\x1b[3%dmrow %d\x1b[0m %s\r\n", i%8, i, strings.Repeat("text ", 20))
	}
	if _, ok := a.Checkpoint(); !ok {
		b.Fatal("no checkpoint")
	}
	b.ReportAllocs()
	for b.Loop() {
		a.Checkpoint()
	}
}

// BenchmarkFeed32K: feeding 32 KB of the same output, to weigh a
// checkpoint against.
func BenchmarkFeed32K(b *testing.B) {
	a := New(Options{Cols: 120, Rows: 40})
	var out []byte
	for i := 0; len(out) < 32<<10; i++ {
		out = fmt.Appendf(out, "\x1b[3%dmrow %d\x1b[0m %s\r\n", i%8, i, strings.Repeat("text ", 20))
	}
	for b.Loop() {
		a.Write(out)
	}
}

// TestCheckpointRandom: random streams of the sequences programs use,
// cut at a random point; where a checkpoint is taken there, the copy it
// draws and the terminal agree after the rest of the stream too.
func TestCheckpointRandom(t *testing.T) {
	frags := []string{
		"text ", "宽", "e\u0301", "\r\n", "\n", "\r", "\b", "\t",
		"\x1b[1;31m", "\x1b[0m", "\x1b[44m", "\x1b[7m", "\x1b[38;2;10;20;30m", "\x1b[4:3m",
		"\x1b[H", "\x1b[5;10H", "\x1b[20;1H", "\x1b[3A", "\x1b[2C", "\x1b[K", "\x1b[1K", "\x1b[J", "\x1b[2J",
		"\x1b[2L", "\x1b[M", "\x1b[3@", "\x1b[P", "\x1b[2S", "\x1b[T", "\x1bM", "\x1bD", "\x1bE",
		"\x1b[3;12r", "\x1b[r", "\x1b7", "\x1b8", "\x1b[?1049h", "\x1b[?1049l", "\x1b[?1047h", "\x1b[?1047l",
		"\x1b[?25l", "\x1b[?25h", "\x1b[?7l", "\x1b[?7h", "\x1b]2;title\a", "\x1b]8;;http://x/\a", "\x1b]8;;\a",
		strings.Repeat("long line ", 6),
	}
	taken, orphans := 0, 0
	for seed := range 400 {
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		var before, after strings.Builder
		for range 200 {
			before.WriteString(frags[rng.IntN(len(frags))])
		}
		for range 60 {
			after.WriteString(frags[rng.IntN(len(frags))])
		}
		a := New(Options{Cols: 30, Rows: 15, ScrollbackLines: 40})
		a.Write([]byte(before.String()))
		cp, ok := a.Checkpoint()
		if !ok {
			continue
		}
		if orphanHalf(a) {
			// The right half of a wide character whose left half an
			// insert or delete moved away: drawn as a blank, one column
			// wider in ANSI (the text is the same). Not reproduced.
			orphans++
			continue
		}
		taken++
		b := New(Options{Cols: 30, Rows: 15, ScrollbackLines: 40})
		b.Write(cp)
		sameTerminals(t, fmt.Sprintf("seed %d, after the checkpoint", seed), a, b)
		a.Write([]byte(after.String()))
		b.Write([]byte(after.String()))
		sameTerminals(t, fmt.Sprintf("seed %d, after more output", seed), a, b)
		if t.Failed() {
			t.Fatalf("seed %d: %q then %q", seed, before.String(), after.String())
		}
	}
	if taken < 100 {
		t.Fatalf("only %d of 400 streams ended in a state a checkpoint takes", taken)
	}
	t.Logf("%d of 400 checkpoints compared, %d with an orphaned half left out", taken, orphans)
}

// orphanHalf reports whether a screen of t holds the right half of a wide
// character without its left half.
func orphanHalf(t *Terminal) bool {
	for _, s := range []*screen{&t.emu.main, &t.emu.alt} {
		for _, l := range s.lines {
			for x, c := range l {
				if c.r == 0 && c.w == 0 && (x == 0 || l[x-1].w != 2) {
					return true
				}
			}
		}
	}
	return false
}
