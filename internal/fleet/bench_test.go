package fleet

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/eventlog"
)

type eventlogEventT = eventlog.Event

// BenchmarkFleetBoard: 1,000 simulated panes over 20 simulated hosts, each
// pane changing state once a second; a board member on another host sees
// each change. Reports the latency from a host's change to the board
// (p50, p99), and the process's CPU and memory (hub, 20 hosts and the
// board share this process).
func BenchmarkFleetBoard(b *testing.B) {
	const hosts, perHost = 20, 50
	run := 10 * time.Second
	// The hub runs in a process of its own, so that its CPU and memory
	// are its own.
	hub := startHubProcess(b)
	url, fleetToken := hub.url, hub.token
	var mu sync.Mutex
	var lat []time.Duration
	measuring := false
	board, err := Join(context.Background(), MemberOptions{Name: "board", URLs: []string{url}, Token: fleetToken, Watch: true,
		OnPane: func(rec PaneRecord, deleted bool) {
			if deleted {
				return
			}
			ns, err := strconv.ParseInt(rec.Message, 10, 64)
			if err != nil {
				return
			}
			d := time.Since(time.Unix(0, ns))
			mu.Lock()
			if measuring {
				lat = append(lat, d)
			}
			mu.Unlock()
		}})
	if err != nil {
		b.Fatal(err)
	}
	defer board.Close(false)
	locals := make([]*fakeLocal, hosts)
	for i := range locals {
		ids := make([]string, perHost)
		for j := range ids {
			ids[j] = fmt.Sprintf("p%02d", j)
		}
		locals[i] = newFakeLocal(ids...)
		m, err := Join(context.Background(), MemberOptions{Name: fmt.Sprintf("h%02d", i), URLs: []string{url}, Token: fleetToken, Local: locals[i]})
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close(false)
	}
	time.Sleep(2 * time.Second) // initial syncs
	states := []string{"working", "blocked", "idle"}
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	hubCPU0 := hub.cpu(b)
	mu.Lock()
	measuring = true
	mu.Unlock()
	b.ResetTimer()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	var wg sync.WaitGroup
	var made atomic.Int64
	for i, l := range locals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each host changes one of its panes every 20 ms: each pane once a second.
			t := time.NewTicker(time.Second / perHost)
			defer t.Stop()
			n := i
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				id := fmt.Sprintf("p%02d", n%perHost)
				l.mu.Lock()
				p := l.panes[id]
				p.State = states[n%3]
				p.Message = strconv.FormatInt(time.Now().UnixNano(), 10)
				l.panes[id] = p
				l.seq++
				ev := eventlogEvent(l.seq, id, p.State)
				l.mu.Unlock()
				l.hub.Publish(ev)
				made.Add(1)
				n++
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	time.Sleep(500 * time.Millisecond)
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	hubCPU := hub.cpu(b) - hubCPU0
	rss, peak := hub.memory(b)
	mu.Lock()
	measuring = false
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	n := len(lat)
	mu.Unlock()
	if n == 0 {
		b.Fatal("the board saw no change")
	}
	cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()) - time.Duration(ru0.Utime.Nano()+ru0.Stime.Nano())
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(lat[n/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[n*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(n)/elapsed.Seconds(), "seen/s")
	b.ReportMetric(float64(made.Load())/elapsed.Seconds(), "made/s")
	b.ReportMetric(100*hubCPU.Seconds()/elapsed.Seconds(), "hub-cpu-%")
	b.ReportMetric(rss, "hub-rss-MiB")
	b.ReportMetric(peak, "hub-peak-rss-MiB")
	b.ReportMetric(100*cpu.Seconds()/elapsed.Seconds(), "members-cpu-%")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "members-heap-MiB")
}

func eventlogEvent(seq uint64, id, state string) eventlogEventT {
	return eventlogEventT{Seq: seq, Time: time.Now(), Pane: id, State: state}
}

// hubProcess is a hub in a child process (this test binary, running
// TestHubProcess).
type hubProcess struct {
	cmd        *exec.Cmd
	url, token string
}

func startHubProcess(b *testing.B) *hubProcess {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHubProcess$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), "CORRAL_FLEET_HUB_DIR="+b.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdin, _ := cmd.StdinPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "HUB" {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return &hubProcess{cmd: cmd, url: f[1], token: f[2]}
		}
	}
	b.Fatal("the hub process did not start")
	return nil
}

// cpu is the hub process's CPU time so far.
func (h *hubProcess) cpu(b *testing.B) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", h.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// memory is the hub process's resident memory now and at its peak, MiB.
func (h *hubProcess) memory(b *testing.B) (rss, peak float64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", h.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	return rss, peak
}

// TestHubProcess runs a hub for BenchmarkFleetBoard in its own process
// (only when that benchmark starts it).
func TestHubProcess(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("CORRAL_FLEET_HUB_DIR")
	if dir == "" {
		t.Skip("run by BenchmarkFleetBoard")
	}
	h, err := StartHub(HubOptions{Dir: dir, Listen: "127.0.0.1:0", ServerName: "hub"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	admin, err := Join(context.Background(), MemberOptions{Name: "hub", URLs: []string{h.URL()}, Token: h.AdminToken(), Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(false)
	fmt.Printf("HUB %s %s\n", h.URL(), h.FleetToken())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the benchmark closes it
}
