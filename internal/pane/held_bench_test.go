package pane

// Benchmarks of the holder: what running a pane under a holder adds to
// the prompt → event delay (against a PTY of the pane's own, interleaved
// in the same run), and what a holder costs in memory. Results and
// commands: docs/benchmarks.md.

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/holder"
)

// BenchmarkHolderPromptToEvent: each iteration prompts a fake agent on a
// direct PTY and one under a holder, in turn, and measures the delay from
// the prompt's last byte (stamped by the agent) to the blocked event.
func BenchmarkHolderPromptToEvent(b *testing.B) {
	type side struct {
		p       *Pane
		stamp   string
		blocked chan time.Time
		done    chan struct{}
		delays  []time.Duration
		n       int
	}
	start := func(held bool) *side {
		s := &side{stamp: filepath.Join(b.TempDir(), "stamps"), blocked: make(chan time.Time, 16), done: make(chan struct{}, 16)}
		cfg := Config{ID: "b", Argv: []string{os.Args[0], "--stamp", s.stamp}, Env: []string{"CORRAL_FAKE_AGENT=1"},
			Cols: 80, Rows: 24, Rules: ruleSet(&testing.T{}), Agent: "claude-code",
			OnChange: func(_ *Pane, c detect.Change) {
				switch c.Decision.State {
				case combine.Blocked:
					s.blocked <- time.Now()
				case combine.Done, combine.Idle:
					s.done <- struct{}{}
				}
			}}
		if held {
			dir := b.TempDir()
			if err := os.Chmod(dir, 0o700); err != nil {
				b.Fatal(err)
			}
			h := &Holding{Exe: os.Args[0], Socket: filepath.Join(dir, "b.sock"), Secret: strings.Repeat("k", 64)}
			cfg.Holder = h
		}
		p, err := Start(cfg)
		if err != nil {
			b.Fatal(err)
		}
		cleanup(b, p)
		s.p = p
		waitScreen(b, p, "? for shortcuts")
		return s
	}
	sides := []*side{start(false), start(true)}
	defer func() {
		for _, s := range sides {
			s.p.Close(time.Second)
		}
	}()
	rng := rand.New(rand.NewSource(1))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, s := range sides {
			time.Sleep(time.Duration(20+rng.Intn(80)) * time.Millisecond)
			drain(s.done)
			if err := s.p.Input([]byte("ask\r"), true); err != nil {
				b.Fatal(err)
			}
			at := <-s.blocked
			s.n++
			s.delays = append(s.delays, at.Sub(lastStamp(b, s.stamp, s.n)))
			if _, err := s.p.Answer("yes"); err != nil {
				b.Fatal(err)
			}
			<-s.done
			s.p.MarkSeen()
		}
	}
	b.StopTimer()
	med := func(d []time.Duration) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	direct, held := med(sides[0].delays), med(sides[1].delays)
	b.ReportMetric(direct, "direct-median-ms")
	b.ReportMetric(held, "holder-median-ms")
	b.ReportMetric(held-direct, "added-ms")
}

// smapsKB returns a process's Rss and Pss from /proc/PID/smaps_rollup.
func smapsKB(pid int) (rss, pss int) {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "Rss:":
			rss = n
		case "Pss:":
			pss = n
		}
	}
	return rss, pss
}

// BenchmarkHolderMemory starts 16 held panes, pushes 1.35 MB of output
// through each (its ring full and wrapped), and reports the holders' Rss
// and Pss per pane, and their CPU time per MB passed on: with a holder
// process per pane ("own"), and with the panes sharing holder processes
// as the daemon starts them ("shared", holder.Pool).
func BenchmarkHolderMemory(b *testing.B) {
	const n = 16
	for i := 0; i < b.N; i++ {
		for _, mode := range []string{"own", "shared"} {
			dir := b.TempDir()
			os.Chmod(dir, 0o700)
			var pool *holder.Pool
			if mode == "shared" {
				pool = &holder.Pool{Exe: os.Args[0]}
			}
			var panes []*Pane
			for j := 0; j < n; j++ {
				h := &Holding{Pool: pool, Exe: os.Args[0], Socket: filepath.Join(dir, fmt.Sprintf("m%d.sock", j)), Secret: strings.Repeat("k", 64)}
				p, err := Start(Config{ID: fmt.Sprintf("m%d", j), Argv: []string{"sh", "-c", "head -c 1000000 /dev/urandom | base64; echo flushed; exec sleep 1000"},
					Cols: 120, Rows: 40, Rules: ruleSet(&testing.T{}), Holder: h})
				if err != nil {
					b.Fatal(err)
				}
				cleanup(b, p)
				panes = append(panes, p)
			}
			var rss, pss int
			var cpu time.Duration
			seen := map[int]bool{}
			for _, p := range panes {
				waitScreen(b, p, "flushed")
				if _, hpid := p.Held(); !seen[hpid] {
					seen[hpid] = true
					r, s := smapsKB(hpid)
					rss, pss = rss+r, pss+s
					cpu += cpuOf(hpid)
				}
			}
			b.ReportMetric(float64(len(seen)), mode+"-holders")
			b.ReportMetric(float64(rss)/n, mode+"-rss-kB/pane")
			b.ReportMetric(float64(pss)/n, mode+"-pss-kB/pane")
			b.ReportMetric(float64(cpu.Milliseconds())/n/1.35, mode+"-cpu-ms/MB")
			for _, p := range panes {
				p.Kill(syscall.SIGKILL)
				<-p.Done()
			}
		}
	}
}
