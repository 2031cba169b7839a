package term

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// History keeps the last rows that scrolled off, oldest first, through
// drops and compactions, whatever their lengths (blank, multi-byte,
// trailing spaces trimmed).
func TestScrollbackKeepsTheLastRows(t *testing.T) {
	row := func(i int) string {
		switch i % 4 {
		case 0:
			return fmt.Sprintf("row %d", i)
		case 1:
			return ""
		case 2:
			return fmt.Sprintf("é ✓ %d %s", i, strings.Repeat("x", i%17))
		}
		return fmt.Sprintf("%d   ", i)
	}
	for _, keep := range []int{1, 2, 3, 7, 50} {
		t.Run(fmt.Sprint(keep), func(t *testing.T) {
			const rows = 3
			term := New(Options{Cols: 40, Rows: rows, ScrollbackLines: keep})
			defer term.Close()
			var written []string
			for i := 0; i < 5*keep+9; i++ {
				feed(t, term, nil, row(i)+"\r\n")
				written = append(written, strings.TrimRight(row(i), " "))
				// The bottom row is the cursor's, empty: rows-1 written rows
				// are on the screen, the rest scrolled off.
				off := written[:max(0, len(written)-(rows-1))]
				want := off[max(0, len(off)-keep):]
				got := term.Scrollback(0)
				if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
					t.Fatalf("after %d rows: history %q, want %q", i+1, got, want)
				}
				if n := min(2, len(want)); n > 0 {
					if got := term.Scrollback(n); !slices.Equal(got, want[len(want)-n:]) {
						t.Fatalf("after %d rows: the last %d %q, want %q", i+1, n, got, want[len(want)-n:])
					}
				}
			}
			feed(t, term, nil, "\x1b[2J\x1b[3J\x1b[H")
			if got := term.Scrollback(0); len(got) != 0 {
				t.Fatalf("after ED 3: history %q", got)
			}
			feed(t, term, nil, "again\r\nand\r\nagain\r\n")
			if got := term.Scrollback(0); !slices.Equal(got, []string{"again"}) {
				t.Fatalf("after ED 3 and three rows: history %q, want [again]", got)
			}
		})
	}
}

// A short row of history costs its text and little more: 200 rows of
// about 26 characters, in 100 terminals, are under 40 bytes a row (34
// packed; as slices of their own, 75: a header, a 32-byte size class and
// the ring of headers' growth).
func TestScrollbackMemory(t *testing.T) {
	const terms, rows = 100, 200
	ts := make([]*Terminal, terms)
	for i := range ts {
		ts[i] = New(Options{Cols: 80, Rows: 2})
		defer ts[i].Close()
	}
	var in strings.Builder
	for i := 0; i < rows+1; i++ {
		fmt.Fprintf(&in, "line %d of the scrollback\r\n", i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, term := range ts {
		term.Write([]byte(in.String()))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	for _, term := range ts {
		if n := len(term.Scrollback(0)); n != rows {
			t.Fatalf("%d rows of history, want %d", n, rows)
		}
	}
	perRow := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / terms / rows
	t.Logf("%.1f bytes a row of history", perRow)
	if perRow > 40 {
		t.Fatalf("a row of history of about 26 characters costs %.1f bytes", perRow)
	}
}
