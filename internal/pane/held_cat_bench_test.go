package pane

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-dev/corral/internal/holder"
)

// BenchmarkHeldCat50MB times `cat` of 50 MB of agent-like output through
// a held pane: the daemon reads the terminal, appends to the shared ring
// and writes its checkpoints.
func BenchmarkHeldCat50MB(b *testing.B) {
	var buf bytes.Buffer
	line := "\x1b[38;5;174m●\x1b[39m Read \x1b[1minternal/parser/lexer.go\x1b[22m and updated the tokenizer; \x1b[2m(ctrl+o to expand)\x1b[22m\r\n"
	for buf.Len() < 50<<20 {
		buf.WriteString(line)
	}
	file := filepath.Join(b.TempDir(), "out")
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	dir, err := holder.SocketDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		h := &Holding{Exe: os.Args[0], Socket: filepath.Join(dir, "cat.sock"), Secret: holder.NewSecret()}
		p, err := Start(Config{ID: "cat", Argv: []string{"cat", file}, Cols: 120, Rows: 32, Rules: ruleSet(&testing.T{}), Holder: h})
		if err != nil {
			b.Fatal(err)
		}
		<-p.Done()
	}
	b.ReportMetric(float64(buf.Len())/1e6*float64(b.N)/b.Elapsed().Seconds(), "MB/s")
}
