package pane

import (
	"fmt"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/status"
)

// BenchmarkFeed measures the read loop's critical section (emulate, tap,
// schedule, forward, and publish what readers see) on 4 KB chunks of
// agent-like output and on a spinner's 40-byte frames, without a PTY's
// noise: an outside pane's feed runs the same steps as the read loop.
// "records" carries OSC 7501 records, which each copy of the pane's state
// includes.
func BenchmarkFeed(b *testing.B) {
	line := "\x1b[38;5;174m●\x1b[39m Read \x1b[1minternal/parser/lexer.go\x1b[22m and updated the tokenizer; \x1b[2m(ctrl+o to expand)\x1b[22m\r\n"
	big := []byte(strings.Repeat(line, 4096/len(line)+1)[:4096])
	spin := []byte("\r\x1b[2K\x1b[38;5;174m✻\x1b[39m Thinking… (3s · esc to interrupt)")
	for _, tc := range []struct {
		name    string
		chunk   []byte
		records int
	}{{"4KB", big, 0}, {"4KB-records", big, 4}, {"spinner", spin, 0}, {"spinner-records", spin, 4}} {
		chunk := tc.chunk
		b.Run(tc.name, func(b *testing.B) {
			p, feed, err := Open(Config{ID: "bench", Rules: ruleSet(&testing.T{}), Agent: "claude-code"},
				&memSource{cols: 120, rows: 32}, 0, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Detach()
			for i := range tc.records {
				r := status.Report{State: status.Working, Progress: 10 * i, Msg: "step", ID: fmt.Sprintf("task/%d", i)}
				feed.Output([]byte(r.Encode()))
			}
			if n := len(p.Info().Records); n != tc.records {
				b.Fatalf("%d records, want %d", n, tc.records)
			}
			b.SetBytes(int64(len(chunk)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				feed.Output(chunk)
			}
		})
	}
}
