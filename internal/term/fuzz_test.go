package term

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzFeed feeds arbitrary bytes, split at an arbitrary point: no panic,
// no hang, and the screen keeps its shape whatever arrives.
func FuzzFeed(f *testing.F) {
	f.Add([]byte("\x1b]0;✳ Claude Code\a\x1b[2J\x1b[HDo\x1b[4Gyou\r\x1b[1B❯ 1. Yes"), 7)
	f.Add([]byte("\x1b]7501;?\x1b\\\x1b[c\x1b[6n\x1b[>0q\x1b[?u\x1b]11;?\a"), 3)
	f.Add([]byte("\x1b[?1049h\x1b[1;3r\x1b[99L\x1b[99M\x1b[99@\x1b[?2048h한👍🏽"), 20)
	f.Add([]byte("\x1bP$q\x1b\\\x1b_G\x1b\\\x9d\x9c\x1b]8;;http://x\a"), 1)
	f.Fuzz(func(t *testing.T, data []byte, split int) {
		var replies bytes.Buffer
		term := New(Options{Cols: 20, Rows: 5, ScrollbackLines: 50, Replies: &replies, OnEvent: func(Event) {}})
		defer term.Close()
		if split < 0 {
			split = -split
		}
		if len(data) > 0 {
			split %= len(data) + 1
		} else {
			split = 0
		}
		term.Write(data[:split])
		term.Write(data[split:])
		s := term.Snapshot()
		if len(s.Lines) != 5 || s.Rows != 5 || s.Cols != 20 {
			t.Fatalf("shape %dx%d with %d lines", s.Cols, s.Rows, len(s.Lines))
		}
		for _, l := range s.Lines {
			if utf8.RuneCountInString(l) > 20*4 {
				t.Fatalf("row of %d runes", utf8.RuneCountInString(l))
			}
		}
		checkRows(t, term)
		if len(term.Scrollback(0)) > 50 {
			t.Fatalf("scrollback beyond its bound")
		}
		if replies.Len() > 64*len(data)+64 {
			t.Fatalf("%d reply bytes for %d input bytes", replies.Len(), len(data))
		}
	})
}

// slowRows rebuilds every visible row from the cells: the reference the
// row cache is checked against.
func slowRows(term *Terminal) []string {
	term.mu.Lock()
	defer term.mu.Unlock()
	out := make([]string, term.emu.rows)
	for y := range out {
		out[y] = term.rowTextLocked(y)
	}
	return out
}

// FuzzSnapshotCache is a differential test of the row cache: after every
// chunk, the cached snapshot must equal a full rebuild.
func FuzzSnapshotCache(f *testing.F) {
	f.Add([]byte("ab\r\ncd\x1b[2;1H\x1b[Lx\x1b[?1049hALT\x1b[?1049ly\x1bcz"), uint8(3))
	f.Add([]byte("\x1b[1;3r\x1b[3;1Ha\nb\nc\nd\x1b[r\x1b[2J\x1b[H한글👍\x1b[5@\x1b[2P\x1b[3X"), uint8(5))
	f.Add([]byte("l1\r\nl2\r\nl3\r\nl4\r\nl5\r\nl6\r\nl7\x1b[S\x1b[T\x1bM\x1bD\x1b[?6h\x1b[2;3r\x1b[H\x1b[M"), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		term := New(Options{Cols: 12, Rows: 5, ScrollbackLines: 20})
		defer term.Close()
		n := int(step%16) + 1
		for i := 0; i < len(data); i += n {
			term.Write(data[i:min(i+n, len(data))])
			if i%(3*n) == 0 {
				term.Resize(12+i%3, 5+i%2)
			}
			got := term.Snapshot().Lines
			want := slowRows(term)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("after %d bytes: cached %q, cells say %q", i+n, got, want)
			}
			checkRows(t, term)
		}
	})
}
