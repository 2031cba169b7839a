package detect

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkClassifyDirtyScreen is one classification as a live pane pays
// it: a spinner frame has dirtied the 32×120 screen of a Claude Code
// session; the engine snapshots it (only touched rows are rebuilt) and
// runs the full claude-code manifest over it.
func BenchmarkClassifyDirtyScreen(b *testing.B) {
	set := agentRules(b)
	for _, tc := range []struct{ name, frame string }{
		{"working", "\x1b[29;1H\x1b[38;5;174m%s\x1b[39m Composing… (%ds · esc to interrupt)"},
		{"prompt", "\x1b[20;1H Do you want to proceed?\r\n ❯ 1. Yes\r\n   2. No\r\n\r\n Esc to cancel · Tab to amend %s%d"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e := New(Config{Cols: 120, Rows: 32, Rules: set, Agent: "claude-code"})
			defer e.Close()
			var screen strings.Builder
			for i := 0; i < 18; i++ {
				fmt.Fprintf(&screen, "● Read internal/parser/lexer_%d.go and updated the tokenizer so nested quotes are handled\r\n", i)
			}
			screen.WriteString(strings.Repeat("─", 120) + "\r\n❯ \r\n" + strings.Repeat("─", 120) + "\r\n  ⏸ manual mode on · esc to interrupt")
			now := time.Unix(0, 0)
			e.Feed(now, []byte(screen.String()))
			e.Classify(now)
			spin := []string{"✻", "✶", "✳", "✢"}
			frames := make([][]byte, 64)
			for i := range frames {
				frames[i] = []byte(fmt.Sprintf(tc.frame, spin[i%4], i))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				e.Feed(now, frames[i%len(frames)])
				b.StartTimer()
				e.Classify(now)
			}
		})
	}
}

// BenchmarkSweepUnknownPane is the once-a-second safety-net
// reclassification of a pane no agent's patterns recognise, whose program
// set a (capped) huge title: with nothing new on screen it must not match
// every agent's patterns again.
func BenchmarkSweepUnknownPane(b *testing.B) {
	set := agentRules(b)
	e := New(Config{Cols: 120, Rows: 32, Rules: set})
	defer e.Close()
	now := time.Unix(0, 0)
	e.Feed(now, []byte("\x1b]2;"+strings.Repeat("x", 4<<20)+"\a$ make build\r\nok\r\n$ "))
	e.Classify(now)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now = now.Add(time.Second)
		e.Classify(now)
	}
}
