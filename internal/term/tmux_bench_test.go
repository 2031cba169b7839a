package term

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkTmuxBaseline feeds the same agent-like bytes as
// BenchmarkFeedAgentLike through a real tmux server (a pane running cat),
// for a ratio measured in the same run. Each iteration starts a detached
// session at 120x32 and waits until cat has written everything and tmux has
// parsed it. Skipped when tmux is not installed.
func BenchmarkTmuxBaseline(b *testing.B) {
	data := bytes.Repeat(agentLike(2000), 20) // ~6 MB: startup cost stays small
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		tmuxCat(b, data)
	}
}

// scrollLines is lines of coloured text, each ending in CRLF, so the screen
// scrolls on every line (the pane benchmark's cat input).
func scrollLines(size int) []byte {
	line := "\x1b[38;5;174m●\x1b[39m Read \x1b[1minternal/parser/lexer.go\x1b[22m and updated the tokenizer; \x1b[2m(ctrl+o to expand)\x1b[22m\r\n"
	return bytes.Repeat([]byte(line), size/len(line)+1)[:size/len(line)*len(line)]
}

func agentLikeSize(size int) []byte {
	one := agentLike(2000)
	return bytes.Repeat(one, size/len(one)+1)[:size]
}

// tmuxCat runs cat of data in a fresh detached 120x32 tmux session and
// returns how long tmux took to take it all in.
func tmuxCat(b *testing.B, data []byte) time.Duration {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		b.Skip("tmux not installed")
	}
	b.StopTimer()
	dir := b.TempDir()
	file := filepath.Join(dir, "out.bin")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		b.Fatal(err)
	}
	sock := filepath.Join(dir, "tmux.sock")
	run := func(args ...string) {
		cmd := exec.Command(tmux, append([]string{"-S", sock, "-f", "/dev/null"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("tmux %v: %v: %s", args, err, out)
		}
	}
	defer exec.Command(tmux, "-S", sock, "kill-server").Run()
	b.StartTimer()
	start := time.Now()
	run("new-session", "-d", "-x", "120", "-y", "32", "cat "+file+"; tmux -S "+sock+" wait-for -S fed")
	run("wait-for", "fed")
	took := time.Since(start)
	b.StopTimer()
	exec.Command(tmux, "-S", sock, "kill-server").Run()
	b.StartTimer()
	return took
}

// feedChunks writes data to a 120x32 terminal in 32 KB reads, as a pane's
// reader delivers it.
func feedChunks(data []byte) time.Duration {
	term := New(Options{Cols: 120, Rows: 32})
	defer term.Close()
	start := time.Now()
	for off := 0; off < len(data); off += 32 << 10 {
		term.Write(data[off:min(off+32<<10, len(data))])
	}
	return time.Since(start)
}

func benchVsTmux(b *testing.B, data []byte) {
	mb := float64(len(data)) / 1e6
	var ours, tmux time.Duration
	for i := 0; i < b.N; i++ {
		ours += feedChunks(data)
		tmux += tmuxCat(b, data)
	}
	n := float64(b.N)
	oursRate, tmuxRate := mb*n/ours.Seconds(), mb*n/tmux.Seconds()
	b.ReportMetric(oursRate, "corral-MB/s")
	b.ReportMetric(tmuxRate, "tmux-MB/s")
	b.ReportMetric(oursRate/tmuxRate, "ratio")
}

// BenchmarkScroll30MB: 30 MB of scrolling coloured lines through corral's
// terminal and through a tmux pane, in the same run.
func BenchmarkScroll30MB(b *testing.B) { benchVsTmux(b, scrollLines(30<<20)) }

// BenchmarkAgentLike30MB: 30 MB of agent-like output, the same way.
func BenchmarkAgentLike30MB(b *testing.B) { benchVsTmux(b, agentLikeSize(30<<20)) }

// BenchmarkMemory200Lines: what a 120x32 pane that printed 200 coloured
// lines costs. corral: the Go heap held by 50 terminals, per terminal.
// tmux: the server's resident memory grown by 50 windows (each ran cat of
// the same lines, then waits), per window.
func BenchmarkMemory200Lines(b *testing.B) {
	benchMemoryVsTmux(b, scrollLines(200*110), "printed its lines", func(tmux func(...string) string, target string) bool {
		n, _ := strconv.Atoi(strings.TrimSpace(tmux("display-message", "-p", "-t", target, "#{history_size}")))
		return n >= 160
	})
}

// benchMemoryVsTmux measures what 50 120x32 panes that were fed input
// cost, per pane: corral's Go heap held by 50 terminals, and the growth of
// a tmux server's resident memory by 50 windows that each ran cat of
// input and wait, once shown(tmux, window) says the window has drawn it.
func benchMemoryVsTmux(b *testing.B, input []byte, what string, shown func(tmux func(...string) string, target string) bool) {
	const panes = 50
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		terms := make([]*Terminal, panes)
		for j := range terms {
			terms[j] = New(Options{Cols: 120, Rows: 32})
			terms[j].Write(input)
			terms[j].Snapshot()
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/panes/1024, "corral-heap-KB/pane")
		runtime.KeepAlive(terms)
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		b.Skip("tmux not installed")
	}
	dir := b.TempDir()
	file := filepath.Join(dir, "input")
	os.WriteFile(file, input, 0o600)
	sock := filepath.Join(dir, "tmux.sock")
	t := func(args ...string) string {
		out, err := exec.Command(tmux, append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			b.Fatalf("tmux %v: %v %s", args, err, out)
		}
		return string(out)
	}
	defer exec.Command(tmux, "-S", sock, "kill-server").Run()
	prog := "cat " + file + "; exec sleep 600"
	t("new-session", "-d", "-x", "120", "-y", "32", prog)
	pid, _ := strconv.Atoi(strings.TrimSpace(t("display-message", "-p", "#{pid}")))
	wait := func(target string) {
		deadline := time.Now().Add(10 * time.Second)
		for !shown(t, target) {
			if time.Now().After(deadline) {
				b.Fatalf("tmux window %s never %s", target, what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	wait(":0")
	rss0 := procRSSKB(pid)
	for j := 1; j <= panes; j++ {
		t("new-window", "-d", prog)
	}
	for j := 1; j <= panes; j++ {
		wait(fmt.Sprintf(":%d", j))
	}
	b.ReportMetric(float64(procRSSKB(pid)-rss0)/panes, "tmux-rss-KB/pane")
}

// agentScreen is what a 120x32 agent pane mostly shows: a few short
// transcript lines, a spinner, an input line in a rounded box and a
// status line, the rest blank.
func agentScreen() []byte {
	var b strings.Builder
	b.WriteString("\x1b]0;✳ Claude Code\a\x1b[2J\x1b[H")
	b.WriteString("\x1b[48;5;237m> fix the failing test in internal/parser\x1b[K\x1b[49m\r\n\r\n")
	b.WriteString("\x1b[38;5;174m●\x1b[39m Read(\x1b[1minternal/parser/lexer.go\x1b[22m)\r\n")
	b.WriteString("  ⎿  Read \x1b[1m212\x1b[22m lines\r\n\r\n")
	b.WriteString("\x1b[38;5;174m●\x1b[39m Update(\x1b[1minternal/parser/lexer.go\x1b[22m)\r\n")
	b.WriteString("  ⎿  Updated internal/parser/lexer.go with \x1b[1m3\x1b[22m additions and \x1b[1m1\x1b[22m removal\r\n\r\n")
	b.WriteString("\x1b[38;5;174m●\x1b[39m The tokenizer now keeps escaped quotes; running the tests again.\r\n\r\n")
	b.WriteString("\x1b[38;5;174m✻\x1b[39m \x1b[38;5;216mWorking…\x1b[39m (12s · ↑ 1.2k tokens · esc to interrupt)\r\n")
	b.WriteString("\x1b[28;1H\x1b[38;5;244m╭" + strings.Repeat("─", 118) + "╮\x1b[39m\r\n")
	b.WriteString("\x1b[38;5;244m│\x1b[39m > \x1b[7m \x1b[27m\x1b[120G\x1b[38;5;244m│\x1b[39m\r\n")
	b.WriteString("\x1b[38;5;244m╰" + strings.Repeat("─", 118) + "╯\x1b[39m\r\n")
	b.WriteString("  \x1b[38;5;246m⏵⏵ accept edits on (shift+tab to cycle)\x1b[39m\x1b[K")
	// The spinner redrawn a few times, as it is while the agent works.
	for i, g := range []string{"✶", "✳", "✢", "·"} {
		fmt.Fprintf(&b, "\x1b[11;1H\x1b[38;5;174m%s\x1b[39m \x1b[38;5;216mWorking…\x1b[39m (%ds · ↑ 1.2k tokens · esc to interrupt)\x1b[K", g, 13+i)
	}
	b.WriteString("\x1b[29;5H")
	return []byte(b.String())
}

// BenchmarkMemoryAgentScreen: what a 120x32 pane showing a typical agent
// screen (agentScreen) costs, measured like BenchmarkMemory200Lines.
func BenchmarkMemoryAgentScreen(b *testing.B) {
	benchMemoryVsTmux(b, agentScreen(), "drew the screen", func(tmux func(...string) string, target string) bool {
		return strings.Contains(tmux("capture-pane", "-p", "-t", target), "accept edits")
	})
}

func procRSSKB(pid int) int {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}
