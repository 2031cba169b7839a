package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkScale runs the same table for corral and for tmux in one run,
// at each number of panes CORRAL_SCALE names:
//
//	CORRAL_SCALE=20,300,1000 go test -run XXX -bench Scale -benchtime 1x -timeout 60m ./cmd/corral
//
// Every pane is a bash that prints 200 lines, then redraws a spinner twice
// a second (read -t on a FIFO nobody writes: no process per tick). For
// each side: the mean start of one pane (corral run, tmux new-window: the
// whole command), the listing (corral ls, ls --json and the API's GET
// /v1/panes; tmux list-panes -a), memory per pane as PSS (the daemon and
// its holder processes; the tmux server: the panes' own programs are
// left out on both sides), CPU over a window with every pane spinning, and
// the time to end everything (corral shutdown; tmux kill-server) until no
// process of either is left. corral alone: re-adoption after kill -9 of
// the daemon, and corral restart.
func BenchmarkScale(b *testing.B) {
	spec := os.Getenv("CORRAL_SCALE")
	if spec == "" {
		b.Skip("CORRAL_SCALE=20,300,1000 runs it")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		need(b, "tmux (apt-get install tmux)")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		need(b, "bash")
	}
	raiseLimits(b)
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("CORRAL_SCALE: %q is not a number of panes", f)
		}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				tm := scaleTmux(b, n)
				co := scaleCorral(b, n)
				// Printed, not logged: a benchmark's log is cut to a few lines.
				fmt.Print("\n" + scaleTable(n, co, tm) + "\n")
				b.ReportMetric(ms(co.start), "run-ms")
				b.ReportMetric(ms(co.lsJSON), "ls-json-ms")
				b.ReportMetric(co.pssKB/float64(n), "pss-KB/pane")
				b.ReportMetric(co.cpu, "cpu-%")
				b.ReportMetric(co.end.Seconds(), "shutdown-s")
				b.ReportMetric(co.readopt.Seconds(), "readopt-s")
				b.ReportMetric(ms(co.events.lagP99), "events-lag-p99-ms")
			}
		})
	}
}

// scaleResult is one side's row of the table.
type scaleResult struct {
	start, ls, lsJSON, api time.Duration
	pssKB                  float64 // the side's own processes, not the panes'
	daemonKB               float64 // of it, corral's daemon's (0 for tmux)
	procs                  int     // how many processes that PSS is of
	cpu                    float64 // % of one core over the window
	end                    time.Duration
	readopt, restart       time.Duration // corral only
	events                 eventsResult  // corral only
}

// eventsResult is what a corral events --follow stream got while every
// pane changed state at once, several times.
type eventsResult struct {
	logged, delivered int           // state changes the daemon logged in the window, and those the stream printed
	loggedRate        float64       // logged a second, from the first to the last logged
	deliveredRate     float64       // printed a second, from the first to the last read
	lagP50, lagP99    time.Duration // an event's time (the daemon's) to its line read here
	lagMax            time.Duration
}

// eventRounds is how many times every pane changes state in eventsUnderLoad.
const eventRounds = 6

// eventsUnderLoad follows corral events (the whole command, its stdout
// read line by line) while every pane turns blocked, then working again,
// eventRounds times: each round waits until the stream has printed the
// change of every pane, or 30 s. Lag is from the event's time, which the
// daemon stamps when it records it, to the line read here (milliseconds:
// the event's time has no finer grain).
func eventsUnderLoad(b *testing.B, e *env, fifo string, n int) eventsResult {
	// From a time before the stream starts: the daemon subscribes it
	// before it reads the log, so no change after warm is missed while
	// the command starts.
	warm := time.Now().Truncate(time.Millisecond)
	cmd := exec.Command(corralBin, "events", "--follow", "--since", warm.UTC().Format(time.RFC3339Nano))
	cmd.Env, cmd.Dir = e.vars, e.dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	type got struct {
		seq       uint64
		state     string
		at, recvd time.Time
	}
	var mu sync.Mutex
	var seen []got
	count := func(state string, since time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		k := 0
		for _, g := range seen {
			if g.state == state && !g.at.Before(since) {
				k++
			}
		}
		return k
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			now := time.Now()
			var ev struct {
				Seq   uint64 `json:"seq"`
				Time  string `json:"time"`
				State string `json:"state"`
			}
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			at, _ := time.Parse(time.RFC3339Nano, ev.Time)
			mu.Lock()
			seen = append(seen, got{ev.Seq, ev.State, at, now})
			mu.Unlock()
		}
	}()
	flag := blockedFlag(fifo)
	toggle := func(blocked bool) {
		if blocked {
			if err := os.WriteFile(flag, nil, 0o600); err != nil {
				b.Fatal(err)
			}
		} else if err := os.Remove(flag); err != nil {
			b.Fatal(err)
		}
	}
	round := func(state string, since time.Time) bool {
		deadline := time.Now().Add(30 * time.Second)
		for count(state, since) < n {
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(20 * time.Millisecond)
		}
		return true
	}
	// A first round, outside the window.
	toggle(true)
	if !round("blocked", warm) {
		b.Errorf("corral events printed %d of %d panes turning blocked within 30 s", count("blocked", warm), n)
	}
	toggle(false)
	round("working", warm)
	start := time.Now().Truncate(time.Millisecond) // the events' grain
	for i := 0; i < eventRounds; i++ {
		state := "blocked"
		if i%2 == 1 {
			state = "working"
		}
		since := time.Now().Truncate(time.Millisecond)
		toggle(state == "blocked")
		if !round(state, since) {
			b.Errorf("round %d: corral events printed %d of %d panes turning %s within 30 s", i, count(state, since), n, state)
		}
	}
	if eventRounds%2 == 1 {
		toggle(false)
	}
	// What the daemon logged in the window, asked once it is over.
	logged := e.must("events", "--since", start.UTC().Format(time.RFC3339Nano))
	var r eventsResult
	var first, last time.Time
	loggedSeqs := map[uint64]bool{}
	for _, line := range strings.Split(strings.TrimSpace(logged), "\n") {
		var ev struct {
			Seq   uint64 `json:"seq"`
			Time  string `json:"time"`
			State string `json:"state"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil || (ev.State != "blocked" && ev.State != "working") {
			continue
		}
		at, _ := time.Parse(time.RFC3339Nano, ev.Time)
		if at.Before(start) {
			continue
		}
		loggedSeqs[ev.Seq] = true
		if first.IsZero() {
			first = at
		}
		last = at
	}
	r.logged = len(loggedSeqs)
	if d := last.Sub(first); d > 0 {
		r.loggedRate = float64(r.logged) / d.Seconds()
	}
	mu.Lock()
	var lags []time.Duration
	var rfirst, rlast time.Time
	for _, g := range seen {
		if !loggedSeqs[g.seq] {
			continue
		}
		r.delivered++
		lags = append(lags, g.recvd.Sub(g.at))
		if rfirst.IsZero() {
			rfirst = g.recvd
		}
		rlast = g.recvd
	}
	mu.Unlock()
	if d := rlast.Sub(rfirst); d > 0 {
		r.deliveredRate = float64(r.delivered) / d.Seconds()
	}
	if len(lags) > 0 {
		slices.Sort(lags)
		r.lagP50 = lags[len(lags)/2]
		r.lagP99 = lags[(len(lags)*99)/100]
		r.lagMax = lags[len(lags)-1]
	}
	return r
}

// cpuWindow is how long CPU is counted with every pane spinning.
const cpuWindow = 10 * time.Second

// spinner is a pane's program: 200 lines, then a spinner at 2 Hz. At each
// tick it reports its state through OSC 7501 when that changed: blocked
// while the file blockedFlag(fifo) exists, else working (a test of the
// shell, no process).
func spinner(fifo string) string {
	return `for i in $(seq 1 200); do echo "line $i of the scrollback"; done; exec 3<>` + fifo +
		`; i=0; s='|/-\'; was=; while :; do if [ -e ` + blockedFlag(fifo) + ` ]; then st=blocked:kind=question; else st=working; fi; ` +
		`[ "$st" = "$was" ] || { printf '\033]7501;state=%s\033\\' "$st"; was=$st; }; ` +
		`printf '\r\033[K%s working (%d)' "${s:$((i%4)):1}" $i; i=$((i+1)); read -t 0.5 -u 3; done`
}

func blockedFlag(fifo string) string { return fifo + ".blocked" }

func scaleCorral(b *testing.B, n int) scaleResult {
	e := newEnv(b)
	fifo := filepath.Join(e.dir, "tick")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		b.Fatal(err)
	}
	var r scaleResult
	start := time.Now()
	for i := 0; i < n; i++ {
		e.must("run", "--name", fmt.Sprintf("s%d", i), "--", "bash", "-c", spinner(fifo))
	}
	r.start = time.Since(start) / time.Duration(n)
	if got := strings.Count(e.must("ls"), "\n") - 1; got != n {
		b.Fatalf("corral ls lists %d panes, want %d", got, n)
	}
	// Every pane has printed its lines and spins.
	waitFor(b, 2*time.Minute, "every pane spinning", func() bool { return len(pidsWith(fifo)) >= n })
	r.ls = meanOf(5, func() { e.must("ls") })
	r.lsJSON = meanOf(5, func() { e.must("ls", "--json") })
	hc := unixClient(filepath.Join(e.dir, "s.sock"))
	r.api = meanOf(5, func() {
		resp, err := hc.Get("http://corral/v1/panes")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	})
	ours := func() []int { return pidsOfExe(corralBin) }
	r.cpu = cpuOver(ours(), cpuWindow)
	r.pssKB, r.procs = pssOf(ours())
	// Which process a change of the whole is in: run to run, the whole
	// moves by megabytes now and then.
	r.daemonKB, _ = pssOf([]int{servingPID(b)})
	r.events = eventsUnderLoad(b, e, fifo, n)
	// The daemon killed: the next command starts a daemon that adopts
	// every pane again.
	daemon := servingPID(b)
	_ = syscall.Kill(daemon, syscall.SIGKILL)
	waitFor(b, 10*time.Second, "the killed daemon gone", func() bool { return syscall.Kill(daemon, 0) != nil })
	start = time.Now()
	if got := strings.Count(e.must("ls"), "\n") - 1; got != n {
		b.Errorf("after kill -9, corral ls lists %d panes, want %d", got, n)
	}
	r.readopt = time.Since(start)
	start = time.Now()
	if _, errs, code := e.run("restart"); code != 0 {
		log, _ := os.ReadFile(filepath.Join(e.dir, "state", "daemon.log"))
		b.Fatalf("corral restart: exit %d: %s\nthe daemon's log ends:\n%s", code, errs, tail(string(log), 3000))
	}
	r.restart = time.Since(start)
	all := append(ours(), pidsWith(fifo)...)
	start = time.Now()
	e.must("shutdown")
	waitFor(b, 60*time.Second, "every process of corral and its panes gone", func() bool { return !anyRuns(all) })
	r.end = time.Since(start)
	if left := append(ours(), pidsWith(fifo)...); len(left) > 0 {
		b.Errorf("processes left after corral shutdown: %v", left)
	}
	return r
}

func scaleTmux(b *testing.B, n int) scaleResult {
	e := newEnv(b)
	ts := newTmux(b, e)
	fifo := filepath.Join(e.dir, "tick")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		b.Fatal(err)
	}
	var r scaleResult
	start := time.Now()
	ts.must("new-session", "-d", "-s", "s0", "-x", "80", "-y", "24", "bash", "-c", spinner(fifo))
	for i := 1; i < n; i++ {
		ts.must("new-window", "-d", "-t", "s0", "bash", "-c", spinner(fifo))
	}
	r.start = time.Since(start) / time.Duration(n)
	waitFor(b, 2*time.Minute, "every pane spinning", func() bool { return len(pidsWith(fifo)) >= n })
	r.ls = meanOf(5, func() { ts.must("list-panes", "-a") })
	pid, err := strconv.Atoi(strings.TrimSpace(ts.must("display-message", "-p", "#{pid}")))
	if err != nil {
		b.Fatal(err)
	}
	r.cpu = cpuOver([]int{pid}, cpuWindow)
	r.pssKB, r.procs = pssOf([]int{pid})
	all := append(pidsWith(fifo), pid)
	start = time.Now()
	ts.must("kill-server")
	waitFor(b, 60*time.Second, "the tmux server and its panes gone", func() bool { return !anyRuns(all) })
	r.end = time.Since(start)
	return r
}

// raiseLimits lifts this process's open-file limit to its hard limit: the
// daemon and the holders, started from here, inherit it.
func raiseLimits(b *testing.B) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err == nil && l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			b.Logf("open files stay at %d: %v", l.Cur, err)
		}
	}
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func meanOf(k int, f func()) time.Duration {
	start := time.Now()
	for i := 0; i < k; i++ {
		f()
	}
	return time.Since(start) / time.Duration(k)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func unixClient(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}, Timeout: 30 * time.Second}
}

// servingPID is the pid of the daemon: the test's binary, serving.
func servingPID(b *testing.B) int {
	for _, pid := range pidsOfExe(corralBin) {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(cmd), "\x00serve") {
			return pid
		}
	}
	b.Fatal("no corral daemon runs")
	return 0
}

// anyRuns reports whether one of the processes still runs (a zombie does
// not). Known pids are checked rather than every process looked at again:
// a look at two thousand processes every 50 ms takes CPU from what is timed.
func anyRuns(pids []int) bool {
	for _, pid := range pids {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			s := string(b)
			if i := strings.LastIndexByte(s, ')'); i > 0 && i+2 < len(s) && s[i+2] != 'Z' {
				return true
			}
		}
	}
	return false
}

// pidsOfExe lists the processes that run the binary at path.
func pidsOfExe(path string) []int {
	var out []int
	eachPID(func(pid int) {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == path {
			out = append(out, pid)
		}
	})
	return out
}

// pidsWith lists the processes whose command line holds s.
func pidsWith(s string) []int {
	var out []int
	eachPID(func(pid int) {
		if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.Contains(string(cmd), s) {
			out = append(out, pid)
		}
	})
	return out
}

func eachPID(f func(int)) {
	ents, _ := os.ReadDir("/proc")
	for _, de := range ents {
		if pid, err := strconv.Atoi(de.Name()); err == nil && pid != os.Getpid() {
			f(pid)
		}
	}
}

// cpuOver is the CPU the processes used over d, in % of one core.
func cpuOver(pids []int, d time.Duration) float64 {
	before := ticksOf(pids)
	time.Sleep(d) // a window of time measured, not a wait for a condition
	after := ticksOf(pids)
	return float64(after-before) / 100 / d.Seconds() * 100 // USER_HZ is 100
}

func ticksOf(pids []int) int64 {
	var sum int64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		sum += u + k
	}
	return sum
}

// pssOf sums the processes' proportional set size, in KB: shared pages
// (the binary's text) split between the processes that map them.
func pssOf(pids []int) (float64, int) {
	var kb float64
	n := 0
	for _, pid := range pids {
		f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
				k, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				kb += k
				n++
			}
		}
		f.Close()
	}
	return kb, n
}

func scaleTable(n int, co, tm scaleResult) string {
	var sb strings.Builder
	ratio := func(a, b float64) string {
		if b == 0 {
			return "—"
		}
		return fmt.Sprintf("×%.2f", a/b)
	}
	row := func(what, c, t, r string) { fmt.Fprintf(&sb, "| %s | %s | %s | %s |\n", what, c, t, r) }
	fmt.Fprintf(&sb, "| %d panes | corral | tmux | corral/tmux |\n|---|---|---|---|\n", n)
	row("start one pane (mean)", fmt.Sprintf("%.1f ms", ms(co.start)), fmt.Sprintf("%.1f ms", ms(tm.start)), ratio(ms(co.start), ms(tm.start)))
	row("start all", fmt.Sprintf("%.1f s", (co.start*time.Duration(n)).Seconds()), fmt.Sprintf("%.1f s", (tm.start*time.Duration(n)).Seconds()), "")
	row("ls (whole command)", fmt.Sprintf("%.1f ms", ms(co.ls)), fmt.Sprintf("%.1f ms", ms(tm.ls)), ratio(ms(co.ls), ms(tm.ls)))
	row("ls --json", fmt.Sprintf("%.1f ms", ms(co.lsJSON)), "", ratio(ms(co.lsJSON), ms(tm.ls)))
	row("API GET /v1/panes", fmt.Sprintf("%.1f ms", ms(co.api)), "", ratio(ms(co.api), ms(tm.ls)))
	row("PSS per pane", fmt.Sprintf("%.0f KB (%d processes)", co.pssKB/float64(n), co.procs), fmt.Sprintf("%.0f KB", tm.pssKB/float64(n)), ratio(co.pssKB, tm.pssKB))
	row("— the daemon's PSS / the holders'", fmt.Sprintf("%.1f / %.1f MB", co.daemonKB/1024, (co.pssKB-co.daemonKB)/1024), "", "")
	row(fmt.Sprintf("CPU, every pane spinning at 2 Hz (%v)", cpuWindow), fmt.Sprintf("%.1f %%", co.cpu), fmt.Sprintf("%.1f %%", tm.cpu), ratio(co.cpu, tm.cpu))
	row("end everything (shutdown / kill-server)", fmt.Sprintf("%.2f s", co.end.Seconds()), fmt.Sprintf("%.2f s", tm.end.Seconds()), ratio(co.end.Seconds(), tm.end.Seconds()))
	row("kill -9 of the daemon: all re-adopted", fmt.Sprintf("%.2f s", co.readopt.Seconds()), "", "")
	row("corral restart", fmt.Sprintf("%.2f s", co.restart.Seconds()), "", "")
	ev := co.events
	row(fmt.Sprintf("events: state changes logged, every pane %d times", eventRounds), fmt.Sprintf("%d (%.0f/s)", ev.logged, ev.loggedRate), "", "")
	row("events: printed by corral events --follow", fmt.Sprintf("%d (%.0f/s)", ev.delivered, ev.deliveredRate), "", "")
	row("events: lag p50 / p99 / max", fmt.Sprintf("%.0f / %.0f / %.0f ms", ms(ev.lagP50), ms(ev.lagP99), ms(ev.lagMax)), "", "")
	return sb.String()
}
