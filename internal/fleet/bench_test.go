package fleet

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strconv"
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
	dir := b.TempDir()
	h, err := StartHub(HubOptions{Dir: dir, Listen: "127.0.0.1:0", ServerName: "hub"})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	admin, err := Join(context.Background(), MemberOptions{Name: "hub", URLs: []string{h.URL()}, Token: h.AdminToken(), Admin: true})
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close(false)
	var mu sync.Mutex
	var lat []time.Duration
	measuring := false
	board, err := Join(context.Background(), MemberOptions{Name: "board", URLs: []string{h.URL()}, Token: h.FleetToken(), Watch: true,
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
		m, err := Join(context.Background(), MemberOptions{Name: fmt.Sprintf("h%02d", i), URLs: []string{h.URL()}, Token: h.FleetToken(), Local: locals[i]})
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close(false)
	}
	time.Sleep(2 * time.Second) // initial syncs
	states := []string{"working", "blocked", "idle"}
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
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
	b.ReportMetric(100*cpu.Seconds()/elapsed.Seconds(), "cpu-%")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(ms.Sys)/(1<<20), "sys-MiB")
	if st := h.srv.JetStreamEnabled(); !st {
		b.Fatal("no JetStream")
	}
}

func eventlogEvent(seq uint64, id, state string) eventlogEventT {
	return eventlogEventT{Seq: seq, Time: time.Now(), Pane: id, State: state}
}
