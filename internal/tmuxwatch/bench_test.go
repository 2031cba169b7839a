package tmuxwatch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	rulesdata "github.com/corral-dev/corral/agents"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/rules"
	"github.com/corral-dev/corral/internal/tmuxctl"
)

func needTmux(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("CORRAL_CI") == "1" {
			tb.Fatal("tmux not found; CI installs it")
		}
		tb.Skip("no tmux")
	}
	return bin
}

func builtinRules(tb testing.TB) *rules.Set {
	set, errs := rules.Loader{Embedded: rulesdata.Rules}.Load(nil)
	if len(errs) > 0 {
		tb.Fatal(errs)
	}
	return set
}

// testServer is a private tmux server.
type testServer struct {
	tb   testing.TB
	bin  string
	srv  tmuxctl.Server
	dir  string
	pids []int
}

func newServer(tb testing.TB) *testServer {
	bin := needTmux(tb)
	dir, err := os.MkdirTemp("", "tw")
	if err != nil {
		tb.Fatal(err)
	}
	ts := &testServer{tb: tb, bin: bin, dir: dir, srv: tmuxctl.Server{Socket: filepath.Join(dir, "s")}}
	tb.Cleanup(func() {
		exec.Command(bin, "-S", ts.srv.Socket, "kill-server").Run()
		os.RemoveAll(dir)
	})
	return ts
}

func (ts *testServer) tmux(args ...string) string {
	ts.tb.Helper()
	cmd := exec.Command(ts.bin, append([]string{"-S", ts.srv.Socket, "-f", "/dev/null"}, args...)...)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	out, err := cmd.CombinedOutput()
	if err != nil {
		ts.tb.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func watchAll(tb testing.TB, ts *testServer, onChange func(p *pane.Pane, c detect.Change)) *Watch {
	set := builtinRules(tb)
	var n int
	var mu sync.Mutex
	w, err := Start(ts.srv, Options{
		Config: func(tp tmuxctl.Pane) (pane.Config, error) {
			mu.Lock()
			n++
			id := "t" + strconv.Itoa(n)
			mu.Unlock()
			return pane.Config{ID: id, Name: tp.Target, Rules: set, OnChange: onChange}, nil
		},
		Added: func(*Pane) {},
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { w.Close() })
	return w
}

// BenchmarkPromptToEvent measures how long a prompt takes from the
// program that prints it to corral's blocked change: in a tmux pane
// watched through control mode, and (the baseline, in the same run) in a
// pane on corral's own PTY. The program prints the prompt when a line
// arrives on a FIFO; the time runs from that write.
func BenchmarkPromptToEvent(b *testing.B) {
	ts := newServer(b)
	fifo := filepath.Join(ts.dir, "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		b.Fatal(err)
	}
	script := `exec 3<>` + fifo + `; while read -r x <&3; do if [ "$x" = p ]; then printf 'Deploy to prod? [y/N] '; else printf '\r\033[Kok\r\n'; fi; done`
	blocked := make(chan time.Time, 16)
	onChange := func(_ *pane.Pane, c detect.Change) {
		if c.Decision.State == combine.Blocked {
			blocked <- time.Now()
		}
	}
	measure := func(b *testing.B, name string) {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		var lat []time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			f.WriteString("p\n")
			select {
			case at := <-blocked:
				lat = append(lat, at.Sub(start))
			case <-time.After(10 * time.Second):
				b.Fatalf("%s: no blocked change", name)
			}
			f.WriteString("c\n")
			time.Sleep(60 * time.Millisecond) // back to idle
		}
		b.StopTimer()
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-median")
		b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "ms-p90")
	}
	b.Run("tmux", func(b *testing.B) {
		ts.tmux("new-session", "-d", "-s", "bench", "-x", "120", "-y", "30", "sh", "-c", script)
		watchAll(b, ts, onChange)
		time.Sleep(300 * time.Millisecond)
		measure(b, "tmux")
		ts.tmux("kill-session", "-t", "bench")
	})
	b.Run("pty", func(b *testing.B) {
		p, err := pane.Start(pane.Config{ID: "base", Argv: []string{"sh", "-c", script}, Cols: 120, Rows: 30,
			Rules: builtinRules(b), OnChange: onChange})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close(time.Second)
		time.Sleep(300 * time.Millisecond)
		measure(b, "pty")
	})
}

// cpuTicks is the user and system time of a process, in clock ticks.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// childTmux lists this process's tmux children (the control clients).
func childTmux() []int {
	self := os.Getpid()
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(self) && strings.Contains(s[:i], "(tmux") {
			out = append(out, pid)
		}
	}
	return out
}

// BenchmarkSpinners50 watches 50 tmux panes that each redraw a spinner at
// 10 Hz, and compares the CPU corral spends on them (this process and its
// control clients) with the CPU the tmux server spends, over the same
// seconds: the ratio is corral/tmux.
func BenchmarkSpinners50(b *testing.B) {
	ts := newServer(b)
	fifo := filepath.Join(ts.dir, "never")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		b.Fatal(err)
	}
	// bash's read -t waits without a process per tick.
	spin := `exec 3<>` + fifo + `; i=0; s='|/-\'; while :; do printf '\r\033[K%s working on it (%d)' "${s:$((i%4)):1}" $i; i=$((i+1)); read -t 0.1 -u 3; done`
	ts.tmux("new-session", "-d", "-s", "s0", "-x", "120", "-y", "30", "bash", "-c", spin)
	for i := 1; i < 50; i++ {
		ts.tmux("new-window", "-t", "s0", "bash", "-c", spin)
	}
	server, _ := strconv.Atoi(ts.tmux("display-message", "-p", "#{pid}"))
	var seen sync.Map
	w := watchAll(b, ts, func(p *pane.Pane, _ detect.Change) { seen.Store(p.ID(), true) })
	deadline := time.Now().Add(20 * time.Second)
	for len(w.Panes()) < 50 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if len(w.Panes()) < 50 {
		b.Fatalf("%d panes watched, want 50", len(w.Panes()))
	}
	time.Sleep(time.Second)
	clients := childTmux()
	self := os.Getpid()
	corral := func() int64 {
		t := cpuTicks(self)
		for _, c := range clients {
			t += cpuTicks(c)
		}
		return t
	}
	clientTicks := func() int64 {
		var t int64
		for _, c := range clients {
			t += cpuTicks(c)
		}
		return t
	}
	b.ResetTimer()
	c0, t0, k0 := corral(), cpuTicks(server), clientTicks()
	for i := 0; i < b.N; i++ {
		time.Sleep(5 * time.Second)
	}
	c1, t1, k1 := corral(), cpuTicks(server), clientTicks()
	b.StopTimer()
	secs := float64(b.N) * 5
	const hz = 100 // USER_HZ
	b.ReportMetric(float64(k1-k0)/hz/secs*100, "clients-cpu%")
	b.ReportMetric(float64(c1-c0)/hz/secs*100, "corral-cpu%")
	b.ReportMetric(float64(t1-t0)/hz/secs*100, "tmux-cpu%")
	if t1 > t0 {
		b.ReportMetric(float64(c1-c0)/float64(t1-t0), "corral/tmux")
	}
	b.Logf("%d control clients: %v", len(clients), fmt.Sprint(clients))
}

// BenchmarkSpinners50PTY is BenchmarkSpinners50's baseline for corral's
// share: the same 50 spinners in panes on corral's own PTYs, the CPU of
// this process alone.
func BenchmarkSpinners50PTY(b *testing.B) {
	ts := newServer(b) // for its folder
	fifo := filepath.Join(ts.dir, "never")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		b.Fatal(err)
	}
	spin := `exec 3<>` + fifo + `; i=0; s='|/-\'; while :; do printf '\r\033[K%s working on it (%d)' "${s:$((i%4)):1}" $i; i=$((i+1)); read -t 0.1 -u 3; done`
	set := builtinRules(b)
	for i := 0; i < 50; i++ {
		p, err := pane.Start(pane.Config{ID: strconv.Itoa(i), Argv: []string{"bash", "-c", spin}, Cols: 120, Rows: 30, Rules: set})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close(time.Second)
	}
	time.Sleep(time.Second)
	self := os.Getpid()
	b.ResetTimer()
	c0 := cpuTicks(self)
	for i := 0; i < b.N; i++ {
		time.Sleep(5 * time.Second)
	}
	c1 := cpuTicks(self)
	b.StopTimer()
	const hz = 100
	b.ReportMetric(float64(c1-c0)/hz/(float64(b.N)*5)*100, "corral-cpu%")
}
