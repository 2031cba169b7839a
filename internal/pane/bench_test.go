package pane

// Benchmarks of live panes. They run only with -bench; each reports its
// numbers with b.ReportMetric and, where it applies, tmux measured the same
// way in the same run. Results and commands: docs/benchmarks.md.

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/holder"
)

// BenchmarkPromptToEvent measures the live delay from a prompt's last byte
// (stamped by the fake agent right after writing it) to the blocked event,
// for corral's event-driven classification and for a 700 ms sweep (the
// design this grew from), in the same run.
func BenchmarkPromptToEvent(b *testing.B) {
	for _, mode := range []struct {
		name           string
		quiet, maxWait time.Duration
		sweep          time.Duration
	}{
		{"event-driven", 0, 0, time.Second},
		{"sweep700ms", time.Hour, time.Hour, 700 * time.Millisecond},
	} {
		b.Run(mode.name, func(b *testing.B) {
			stamp := filepath.Join(b.TempDir(), "stamps")
			blocked := make(chan time.Time, 16)
			done := make(chan struct{}, 16)
			p, err := Start(Config{ID: "b", Argv: []string{os.Args[0], "--stamp", stamp}, Env: []string{"CORRAL_FAKE_AGENT=1"},
				Cols: 80, Rows: 24, Rules: ruleSet(&testing.T{}), Agent: "claude-code", Sweep: mode.sweep, Quiet: mode.quiet, MaxWait: mode.maxWait,
				OnChange: func(_ *Pane, c detect.Change) {
					switch c.Decision.State {
					case combine.Blocked:
						blocked <- time.Now()
					case combine.Done, combine.Idle:
						done <- struct{}{}
					}
				}})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(time.Second)
			waitScreen(b, p, "? for shortcuts")
			var delays []time.Duration
			rng := rand.New(rand.NewSource(1))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Prompts fall at any phase of a sweep, as they do live.
				time.Sleep(time.Duration(rng.Intn(700)) * time.Millisecond)
				drain(done)
				if err := p.Input([]byte("ask\r"), true); err != nil {
					b.Fatal(err)
				}
				at := <-blocked
				delays = append(delays, at.Sub(lastStamp(b, stamp, i+1)))
				if _, err := p.Answer("yes"); err != nil {
					b.Fatal(err)
				}
				<-done
				p.MarkSeen()
			}
			b.StopTimer()
			sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
			b.ReportMetric(float64(delays[len(delays)/2].Microseconds())/1000, "median-ms")
			b.ReportMetric(float64(delays[len(delays)-1].Microseconds())/1000, "max-ms")
		})
	}
}

func drain(c chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

func lastStamp(b *testing.B, path string, n int) time.Time {
	deadline := time.Now().Add(5 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		lines := strings.Fields(string(data))
		if len(lines) >= n {
			ns, _ := strconv.ParseInt(lines[n-1], 10, 64)
			return time.Unix(0, ns)
		}
		if time.Now().After(deadline) {
			b.Fatalf("no stamp %d", n)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitScreen(b *testing.B, p *Pane, text string) {
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(p.Snapshot().Text(), text) {
		if time.Now().After(deadline) {
			b.Fatalf("no %q on screen", text)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cpuOf returns the CPU time a process's threads ran, from the
// scheduler's own nanosecond counts (/proc/PID/task/*/schedstat): the
// tick-sampled utime and stime miss most of a process that runs for
// microseconds at a time, as a pane's holder does.
func cpuOf(pid int) time.Duration {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var total time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		if f := strings.Fields(string(data)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			total += time.Duration(ns)
		}
	}
	return total
}

// rssKB is a process's resident memory of its own: anonymous (heap,
// stacks) and shared memory it maps (a held pane's ring), not the pages of
// its program file, which the first pane of a kind faults in once (the
// code that runs it) and which cost nothing per pane.
func rssKB(pid int) int {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	total := 0
	for _, line := range strings.Split(string(data), "\n") {
		for _, key := range []string{"RssAnon:", "RssShmem:"} {
			if v, ok := strings.CutPrefix(line, key); ok {
				n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
				total += n
			}
		}
	}
	return total
}

const spinPanes = 50

// BenchmarkSpinners50 runs 50 fake agents each redrawing a spinner at
// 10 Hz, and measures the CPU the host uses to keep their screens: corral's
// panes on PTYs of their own (this process), corral's panes under holders
// (this process plus the 50 holders), and a tmux server with the same 50
// agents, each over the same window. Resident memory per pane is reported
// for each. CORRAL_SPIN_PROFILE=dir writes a CPU profile of this process
// over each corral window, and of its heap after each (-memprofilerate
// samples it finer, at a cost to the CPU it measures); CORRAL_SPIN_WINDOW=20s
// lengthens the windows.
func BenchmarkSpinners50(b *testing.B) {
	window := 5 * time.Second
	if d, err := time.ParseDuration(os.Getenv("CORRAL_SPIN_WINDOW")); err == nil {
		window = d
	}
	fake := []string{os.Args[0]}
	self := os.Getpid()
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(GCPercent)) // as the daemon
	}

	// One rule set for every pane, as the daemon has.
	set := ruleSet(&testing.T{})
	for _, held := range []bool{false, true} {
		mode := "direct"
		if held {
			mode = "held"
		}
		// The baseline is taken with the first pane running, as tmux's is
		// with its first window: what the first pane of a kind sets up
		// once (code, rule caches, read buffers) is not a pane's cost.
		var rssBefore int
		var ms0 runtime.MemStats
		var panes []*Pane
		pool := &holder.Pool{Exe: os.Args[0]} // as the daemon: holder processes shared by GroupSize panes
		dir := b.TempDir()
		os.Chmod(dir, 0o700)
		for i := 0; i < spinPanes; i++ {
			cfg := Config{ID: fmt.Sprint(i), Argv: fake, Env: []string{"CORRAL_FAKE_AGENT=1"}, Cols: 120, Rows: 32,
				Rules: set, Agent: "claude-code"}
			if held {
				cfg.Holder = &Holding{Pool: pool, Socket: filepath.Join(dir, fmt.Sprintf("s%d.sock", i)), Secret: strings.Repeat("k", 64)}
			}
			p, err := Start(cfg)
			if err != nil {
				b.Fatal(err)
			}
			cleanup(b, p)
			panes = append(panes, p)
			if i == 0 {
				waitScreen(b, p, "? for shortcuts")
				runtime.GC()
				debug.FreeOSMemory()
				rssBefore = rssKB(self)
				runtime.ReadMemStats(&ms0)
			}
		}
		for _, p := range panes {
			waitScreen(b, p, "? for shortcuts")
			p.Input([]byte("work 60\r"), true)
		}
		time.Sleep(time.Second) // every spinner running
		holderCPU := func() (d time.Duration) {
			seen := map[int]bool{}
			for _, p := range panes {
				if _, pid := p.Held(); pid > 0 && !seen[pid] {
					seen[pid] = true
					d += cpuOf(pid)
				}
			}
			return d
		}
		if d := os.Getenv("CORRAL_SPIN_PROFILE"); d != "" {
			f, err := os.Create(filepath.Join(d, "cpu-"+mode+".prof"))
			if err != nil {
				b.Fatal(err)
			}
			pprof.StartCPUProfile(f)
		}
		start, cpu0, hcpu0 := time.Now(), cpuOf(self), holderCPU()
		time.Sleep(window)
		elapsed := float64(time.Since(start))
		cpu := float64(cpuOf(self)-cpu0) / elapsed * 100
		hcpu := float64(holderCPU()-hcpu0) / elapsed * 100
		if os.Getenv("CORRAL_SPIN_PROFILE") != "" {
			pprof.StopCPUProfile()
		}
		rssPerPane := float64(rssKB(self)-rssBefore) / (spinPanes - 1)
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		live := float64(int64(ms.HeapAlloc+ms.StackInuse)-int64(ms0.HeapAlloc+ms0.StackInuse)) / 1024 / (spinPanes - 1)
		if d := os.Getenv("CORRAL_SPIN_PROFILE"); d != "" {
			if f, err := os.Create(filepath.Join(d, "heap-"+mode+".prof")); err == nil {
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		}
		b.ReportMetric(cpu, mode+"-cpu-%")
		b.ReportMetric(rssPerPane, mode+"-rss-KB/pane")
		b.ReportMetric(live, mode+"-heap+stack-KB/pane")
		if held {
			b.ReportMetric(hcpu, "holders-cpu-%")
			hrss, seen := 0, map[int]bool{}
			for _, p := range panes {
				if _, pid := p.Held(); !seen[pid] {
					seen[pid] = true
					_, pss := smapsKB(pid)
					hrss += pss
				}
			}
			b.ReportMetric(float64(hrss)/spinPanes, "holders-pss-KB/pane")
			b.ReportMetric(float64(len(seen)), "holders")
		}
		for _, p := range panes {
			p.Close(time.Second)
		}
	}

	// tmux, the same agents
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		b.Skip("tmux not installed: no baseline")
	}
	sock := filepath.Join(b.TempDir(), "tmux.sock")
	t := func(args ...string) string {
		out, err := exec.Command(tmux, append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			b.Fatalf("tmux %v: %v %s", args, err, out)
		}
		return string(out)
	}
	defer exec.Command(tmux, "-S", sock, "kill-server").Run()
	agent := "CORRAL_FAKE_AGENT=1 " + os.Args[0]
	t("new-session", "-d", "-x", "120", "-y", "32", agent)
	pid, _ := strconv.Atoi(strings.TrimSpace(t("display-message", "-p", "#{pid}")))
	tmuxRSS0 := rssKB(pid)
	for i := 1; i < spinPanes; i++ {
		t("new-window", "-d", agent)
	}
	for i := 0; i < spinPanes; i++ {
		target := fmt.Sprintf(":%d", i)
		deadline := time.Now().Add(15 * time.Second)
		for !strings.Contains(t("capture-pane", "-p", "-t", target), "? for shortcuts") {
			if time.Now().After(deadline) {
				b.Fatalf("tmux window %d never ready", i)
			}
			time.Sleep(10 * time.Millisecond)
		}
		t("send-keys", "-t", target, "work 60", "Enter")
	}
	time.Sleep(time.Second)
	start, cpu0 := time.Now(), cpuOf(pid)
	time.Sleep(window)
	tmuxCPU := float64(cpuOf(pid)-cpu0) / float64(time.Since(start)) * 100
	tmuxRSSPerPane := float64(rssKB(pid)-tmuxRSS0) / (spinPanes - 1)

	b.ReportMetric(tmuxCPU, "tmux-cpu-%")
	b.ReportMetric(tmuxRSSPerPane, "tmux-rss-KB/pane")
}

// BenchmarkCat50MB times `cat` of 50 MB of agent-like output through a
// pane, and through a tmux pane, in the same run.
func BenchmarkCat50MB(b *testing.B) {
	var buf bytes.Buffer
	line := "\x1b[38;5;174m●\x1b[39m Read \x1b[1minternal/parser/lexer.go\x1b[22m and updated the tokenizer; \x1b[2m(ctrl+o to expand)\x1b[22m\r\n"
	for buf.Len() < 50<<20 {
		buf.WriteString(line)
	}
	file := filepath.Join(b.TempDir(), "out")
	os.WriteFile(file, buf.Bytes(), 0o600)
	size := float64(buf.Len()) / 1e6

	start := time.Now()
	p, err := Start(Config{ID: "cat", Argv: []string{"cat", file}, Cols: 120, Rows: 32, Rules: ruleSet(&testing.T{})})
	if err != nil {
		b.Fatal(err)
	}
	<-p.Done()
	corral := size / time.Since(start).Seconds()

	b.ReportMetric(corral, "corral-MB/s")
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		b.Skip("tmux not installed: no baseline")
	}
	sock := filepath.Join(b.TempDir(), "tmux.sock")
	defer exec.Command(tmux, "-S", sock, "kill-server").Run()
	start = time.Now()
	if out, err := exec.Command(tmux, "-S", sock, "-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "32",
		"cat "+file+"; tmux -S "+sock+" wait-for -S fed").CombinedOutput(); err != nil {
		b.Fatalf("tmux: %v %s", err, out)
	}
	exec.Command(tmux, "-S", sock, "wait-for", "fed").Run()
	tmuxRate := size / time.Since(start).Seconds()
	b.ReportMetric(tmuxRate, "tmux-MB/s")
	b.ReportMetric(corral/tmuxRate, "ratio")
}
