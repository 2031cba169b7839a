package term

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A terminal whose program redraws in place (a spinner) has its history
// compressed once no row went to it over two calls to CompactRows; one
// that takes a row between the calls keeps it as text; either reads the
// same, and takes rows after as before.
func TestDrawingTerminalHistoryCompressed(t *testing.T) {
	var lines strings.Builder
	for i := range 200 {
		fmt.Fprintf(&lines, "line %d of the scrollback\r\n", i)
	}
	for _, c := range []struct {
		name       string
		tick       string // written between two calls
		compressed []bool // after each call
	}{
		{"spinner", "\r\x1b[K| working", []bool{false, false, true, true}},
		{"a row each call", "a row\r\n", []bool{false, false, false, false}},
		{"nothing written", "", []bool{false, false, true, true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			term := New(Options{Cols: 80, Rows: 24})
			term.Write([]byte(lines.String()))
			for i, want := range c.compressed {
				term.Write([]byte(c.tick))
				history := term.Scrollback(0)
				checkpoint, _ := term.Checkpoint()
				term.CompactRows()
				if got := term.emu.sb.z != nil; got != want {
					t.Fatalf("after call %d: history compressed %v, want %v", i+1, got, want)
				}
				if want && (term.emu.sb.text != nil || term.emu.sb.starts != nil) {
					t.Fatalf("after call %d: a compressed history keeps %d bytes of text and %d offsets", i+1, len(term.emu.sb.text), len(term.emu.sb.starts))
				}
				if after := term.Scrollback(0); !slices.Equal(after, history) {
					t.Fatalf("after call %d: the history reads %d rows, %q…, want %d, %q…", i+1, len(after), after[:1], len(history), history[:1])
				}
				if after, _ := term.Checkpoint(); !bytes.Equal(after, checkpoint) {
					t.Fatalf("after call %d: the checkpoint changed (%d bytes, was %d)", i+1, len(after), len(checkpoint))
				}
			}
			// A row pushed to a compressed history lands after the others.
			before := term.Scrollback(0)
			term.Write([]byte(strings.Repeat("\r\nnext\r\n", 24)))
			after := term.Scrollback(0)
			if term.emu.sb.z != nil || len(after) <= len(before) || !slices.Equal(after[:len(before)], before) {
				t.Fatalf("rows pushed after: compressed %v, %d rows before, %d after", term.emu.sb.z != nil, len(before), len(after))
			}
		})
	}
}
