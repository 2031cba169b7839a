package pane

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
	"github.com/corral-dev/corral/internal/term"
)

// A pane whose program goes quiet has its screen packed at a sweep; reads
// still see it whole, with its colours, and the next output unpacks it and
// lands on it.
func TestQuietPaneIsCompacted(t *testing.T) {
	t.Parallel()
	p, err := Start(Config{ID: "quiet", Argv: []string{"sh", "-i"}, Env: []string{"PS1=$ "},
		Cols: 80, Rows: 24, Rules: ruleSet(t), Sweep: 50 * time.Millisecond, CompactAfter: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(2 * time.Second)
	awaitScreen(t, p, "$")
	if err := p.Input([]byte("printf '\\033[31mred\\033[m ok\\n'\r"), false); err != nil {
		t.Fatal(err)
	}
	awaitScreen(t, p, "red ok")
	awaitCompacted(t, p)

	red := func() bool {
		for _, row := range p.StyledRows() {
			for _, r := range row {
				if r.Text == "red" && r.FG != "" {
					return true
				}
			}
		}
		return false
	}
	if !strings.Contains(p.Snapshot().Text(), "red ok") || !red() || !strings.Contains(p.ANSI(), "red") {
		t.Fatalf("the compacted screen reads\n%s\n%v", p.Snapshot().Text(), p.StyledRows())
	}
	if !p.term.Compacted() {
		t.Fatal("reading the screen unpacked it")
	}

	if err := p.Input([]byte("echo again\r"), false); err != nil {
		t.Fatal(err)
	}
	awaitScreen(t, p, "\nagain")
	if text := p.Snapshot().Text(); !strings.Contains(text, "red ok") || !red() {
		t.Fatalf("after more output the screen reads\n%s", text)
	}
	awaitCompacted(t, p) // quiet again
}

// A pane whose program still draws one row (a spinner) has its other rows
// packed, and its screen reads the same.
func TestSpinnerPaneRowsAreCompacted(t *testing.T) {
	t.Parallel()
	prog := `printf '\033[32mfirst\033[m row\nsecond row\n'; i=0; while :; do printf '\r%s spinning' $i; i=$((i+1)); sleep 0.05; done`
	p, err := Start(Config{ID: "spin", Argv: []string{"sh", "-c", prog},
		Cols: 80, Rows: 24, Rules: ruleSet(t), Sweep: 50 * time.Millisecond, CompactAfter: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(2 * time.Second)
	awaitScreen(t, p, "spinning")
	if !proctest.WaitFor(15*time.Second, func() bool { return p.term.PackedRows() >= 2 }) {
		t.Fatalf("%d rows packed; the screen shows\n%s", p.term.PackedRows(), p.Snapshot().Text())
	}
	if p.term.Compacted() {
		t.Fatal("a pane drawing a spinner was packed whole")
	}
	lines := p.Snapshot().Lines
	if lines[0] != "first row" || lines[1] != "second row" || !strings.HasSuffix(lines[2], " spinning") {
		t.Fatalf("the screen reads %q", lines[:3])
	}
	if rows := p.StyledRows(); len(rows[0]) == 0 || rows[0][0].Text != "first" || rows[0][0].FG == "" {
		t.Fatalf("row 0 reads %+v", rows[0])
	}
}

// The sweep compacts a screen once the program has been quiet for
// CompactAfter (its default when zero, never when negative), and not the
// screen of a pane that exited.
func TestCompactIdleDecides(t *testing.T) {
	t.Parallel()
	now := time.Now()
	tests := []struct {
		name   string
		after  time.Duration
		quiet  time.Duration
		exited bool
		want   bool
	}{
		{"quiet long enough", time.Second, 2 * time.Second, false, true},
		{"not quiet long enough", time.Second, 500 * time.Millisecond, false, false},
		{"default, not yet", 0, DefaultCompactAfter - time.Second, false, false},
		{"default, quiet", 0, DefaultCompactAfter + time.Second, false, true},
		{"never", -1, time.Hour, false, false},
		{"exited", time.Second, time.Hour, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tm := term.New(term.Options{Cols: 20, Rows: 4})
			tm.Write([]byte("\x1b[31mhello\x1b[m"))
			p := &Pane{cfg: Config{CompactAfter: tc.after}, term: tm, exited: tc.exited}
			p.outputAt.Store(now.Add(-tc.quiet).UnixNano())
			p.compactIdleLocked(now)
			if got := tm.Compacted(); got != tc.want {
				t.Fatalf("compacted %v, want %v", got, tc.want)
			}
			if got := tm.Snapshot().Lines[0]; got != "hello" {
				t.Fatalf("row 0 reads %q", got)
			}
		})
	}
}

func awaitCompacted(t *testing.T, p *Pane) {
	t.Helper()
	if !proctest.WaitFor(15*time.Second, p.term.Compacted) {
		t.Fatalf("the quiet pane's screen was not compacted; it shows\n%s", p.Snapshot().Text())
	}
}

// BenchmarkIdlePaneHeap measures the heap a pane showing an agent's screen
// (120x32, colours, rules of box-drawing characters) costs while it draws
// and once it is quiet and compacted: 100 panes, the heap measured after a
// collection, in the same run.
//
//	go test -run XXX -bench IdlePaneHeap -benchtime 1x ./internal/pane
func BenchmarkIdlePaneHeap(b *testing.B) {
	const n = 100
	screen := filepath.Join(b.TempDir(), "screen")
	if err := os.WriteFile(screen, []byte(agentScreen()), 0o600); err != nil {
		b.Fatal(err)
	}
	heap := func() float64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc)
	}
	rs := ruleSet(&testing.T{})
	for i := 0; i < b.N; i++ {
		base := heap()
		panes := make([]*Pane, n)
		for j := range panes {
			p, err := Start(Config{ID: fmt.Sprint("idle", j), Argv: []string{"sh", "-c", "cat " + screen + "; exec sleep 600"},
				Cols: 120, Rows: 32, Rules: rs, Sweep: 100 * time.Millisecond, CompactAfter: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			panes[j] = p
		}
		for _, p := range panes {
			if !proctest.WaitFor(time.Minute, func() bool { return strings.Contains(p.Snapshot().Text(), "esc to interrupt") }) {
				b.Fatalf("the screen did not arrive:\n%s", p.Snapshot().Text())
			}
		}
		drawn := heap()
		for _, p := range panes {
			p.mu.Lock()
			p.cfg.CompactAfter = time.Millisecond
			p.unlock()
		}
		for _, p := range panes {
			if !proctest.WaitFor(time.Minute, p.term.Compacted) {
				b.Fatal("a quiet pane was not compacted")
			}
		}
		compacted := heap()
		b.ReportMetric((drawn-base)/n/1024, "heap-KB/pane")
		b.ReportMetric((compacted-base)/n/1024, "compacted-heap-KB/pane")
		for _, p := range panes {
			p.Close(2 * time.Second)
		}
	}
}

// agentScreen is a screen like a coding agent's: a transcript in colours,
// a rule, the prompt, a rule and the footer, 32 rows of 120 columns.
func agentScreen() string {
	var b strings.Builder
	b.WriteString("\x1b[2J\x1b[H")
	for i := range 24 {
		fmt.Fprintf(&b, "\x1b[1m●\x1b[22m Read \x1b[38;5;246mfile_%d.go\x1b[39m and updated the parser for case %d, keeping the tests green\r\n", i, i)
	}
	rule := "\x1b[38;5;244m" + strings.Repeat("─", 120) + "\x1b[39m"
	fmt.Fprintf(&b, "\x1b[38;5;174m✻\x1b[39m \x1b[38;5;216mWorking…\x1b[39m (12s · esc to interrupt)\r\n\r\n%s\r\n❯ \r\n%s\r\n  ⏸ manual mode on\r\n", rule, rule)
	return b.String()
}
