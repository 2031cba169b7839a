package term

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// agentLike is output shaped like a coding agent's: a spinner redrawn in
// place with colours, words placed with CSI n G, rows begun with CR and
// cursor-down, and plain transcript text that scrolls.
func agentLike(frames int) []byte {
	var b strings.Builder
	spin := []string{"✻", "✶", "✳", "✢", "·", "*"}
	for i := 0; i < frames; i++ {
		// Spinner frame (~60 bytes): home, down, colour, glyph, status.
		fmt.Fprintf(&b, "\x1b[H\r\x1b[23B\x1b[38;5;174m%s\x1b[39m \x1b[38;5;216mWorking…\x1b[39m (%ds · esc to interrupt)\x1b[30;1H", spin[i%len(spin)], i/10)
		if i%5 == 0 {
			// A transcript line with colours and a word placed by column.
			fmt.Fprintf(&b, "\x1b[28;1H\r\n\x1b[1m●\x1b[22m Read\x1b[9G\x1b[38;5;246mfile_%d.go\x1b[39m and updated the parser for case %d\r\n", i, i)
		}
		if i%20 == 0 {
			// A redrawn box: rule, prompt, footer.
			b.WriteString("\x1b[27;1H\x1b[38;5;244m" + strings.Repeat("─", 120) + "\x1b[39m\r\x1b[1B❯ \x1b[K\r\x1b[1B\x1b[38;5;244m" + strings.Repeat("─", 120) + "\x1b[39m\r\x1b[1B  ⏸ manual mode on · esc to interrupt\x1b[K")
		}
	}
	return []byte(b.String())
}

func benchFeed(b *testing.B, data []byte) {
	term := New(Options{Cols: 120, Rows: 32})
	defer term.Close()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		term.Write(data)
	}
}

// BenchmarkFeedAgentLike measures terminal throughput on synthetic agent
// output. Compare with BenchmarkParserOnly in the same run: the ratio is the
// cost of emulating the screen over merely parsing the bytes.
func BenchmarkFeedAgentLike(b *testing.B) { benchFeed(b, agentLike(2000)) }

// BenchmarkFeedRecording feeds a real Claude Code session.
func BenchmarkFeedRecording(b *testing.B) {
	data, err := os.ReadFile("../../testdata/casts/claude-code-2.1.197/session.raw")
	if err != nil {
		b.Skip(err)
	}
	benchFeed(b, data)
}

// BenchmarkParserOnly runs the same bytes through the escape-sequence
// parser the emulator uses, with no-op handlers: the floor under any
// emulator built on it.
func BenchmarkParserOnly(b *testing.B) {
	data := agentLike(2000)
	p := ansi.NewParser()
	p.SetHandler(ansi.Handler{})
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, c := range data {
			p.Advance(c)
		}
	}
}

func BenchmarkSnapshot(b *testing.B) {
	term := New(Options{Cols: 120, Rows: 32})
	defer term.Close()
	term.Write(agentLike(200))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		term.Snapshot()
	}
}

// BenchmarkFeedScroll feeds lines of coloured text that scroll the screen
// on every line.
func BenchmarkFeedScroll(b *testing.B) { benchFeed(b, scrollLines(1<<20)) }
