package term

import (
	"bytes"
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
		if len(term.Scrollback(0)) > 50 {
			t.Fatalf("scrollback beyond its bound")
		}
		if replies.Len() > 64*len(data)+64 {
			t.Fatalf("%d reply bytes for %d input bytes", replies.Len(), len(data))
		}
	})
}
