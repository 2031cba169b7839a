package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/server"
)

func freeLoopback(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (e *env) fleetStatusFull() server.FleetStatus {
	e.t.Helper()
	var st server.FleetStatus
	c := client.New(filepath.Join(e.dir, "s.sock"))
	if err := c.Do(context.Background(), "GET", "/v1/fleet/status", nil, &st); err != nil {
		e.t.Fatal(err)
	}
	return st
}

func hostSeqs(t *testing.T, e *env, host string) []uint64 {
	t.Helper()
	var seqs []uint64
	for _, l := range strings.Split(strings.TrimSpace(e.must("events", host, "--since", "1h")), "\n") {
		var ev struct {
			Host string
			Seq  uint64
		}
		if l != "" && json.Unmarshal([]byte(l), &ev) == nil && ev.Host == host {
			seqs = append(seqs, ev.Seq)
		}
	}
	return seqs
}

// Three hub daemons in one cluster (init, then join-hub twice) and a
// member: one hub killed -9, and the fleet goes on: events keep flowing
// with none lost, a command to another host is answered, a job runs.
func TestFleetHubClusterSurvivesAKill(t *testing.T) {
	// Known to fail about one run in two: after the kill, the remaining
	// hubs' view of the pane bucket sometimes does not recover within a
	// minute (heartbeats and events do). Run it on purpose until fixed.
	if os.Getenv("CORRAL_TEST_HUB_KILL") == "" {
		t.Skip("flaky: the pane view after a hub's SIGKILL sometimes does not recover; CORRAL_TEST_HUB_KILL=1 runs it")
	}
	h1, h2, h3, m := newEnv(t), newEnv(t), newEnv(t), newEnv(t)
	var info server.FleetJoinInfo
	decode := func(out string) server.FleetJoinInfo {
		var i server.FleetJoinInfo
		if err := json.Unmarshal([]byte(out), &i); err != nil {
			t.Fatalf("%v: %q", err, out)
		}
		return i
	}
	info = decode(h1.must("fleet", "init", "--listen", "127.0.0.1:0", "--name", "h1", "--max-jobs", "0", "--cluster-listen", freeLoopback(t), "--json"))
	if !strings.Contains(info.JoinHub, "--hub-token chj_") {
		t.Fatalf("no join-hub command: %+v", info)
	}
	joinHub := func(e *env, name, cmd string) server.FleetJoinInfo {
		f := strings.Fields(cmd)
		// corral fleet join-hub URLS --hub-token T [--ca-fingerprint F] --cluster-listen HOST:PORT
		args := append([]string{"fleet"}, f[2:len(f)-1]...)
		args = append(args, freeLoopback(t), "--name", name, "--listen", "127.0.0.1:0", "--max-jobs", "0", "--json")
		return decode(e.must(args...))
	}
	info2 := joinHub(h2, "h2", info.JoinHub)
	info3 := joinHub(h3, "h3", info2.JoinHub)
	if n := len(strings.Split(info3.URL, ",")); n < 2 {
		t.Fatalf("the third hub's join command names %d hubs: %s", n, info3.Join)
	}
	until(t, 60*time.Second, "the fleet's buckets and streams at 3 replicas", func() bool {
		return h3.fleetStatusFull().Replicas == 3
	})
	var urls []string
	for _, i := range []server.FleetJoinInfo{info, info2, info3} {
		urls = append(urls, strings.Split(i.URL, ",")[0])
	}
	m.must("fleet", "join", strings.Join(urls, ","), "--token", info.Token, "--name", "m", "--max-jobs", "1")
	until(t, 30*time.Second, "m on every hub", func() bool {
		for _, h := range []*env{h1, h2, h3} {
			if !h.fleetHosts()["m"].Reachable {
				return false
			}
		}
		return true
	})
	m.must("run", "--name", "before", "--", "sh", "-c", "exit 3")
	m.must("wait", "before", "--state", "exited", "--timeout", "10s")
	if err := syscall.Kill(h1.daemonPID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	defer func() {
		if t.Failed() {
			for _, e := range []*env{h2, h3, m} {
				out, errs, _ := e.run("fleet", "status")
				b, _ := json.Marshal(e.fleetStatusFull().Member)
				t.Logf("%s%s\n%s", out, errs, b)
				t.Log(e.must("ls", "--fleet"))
			}
		}
	}()
	// Events made while the cluster elects new leaders.
	for i := range 5 {
		name := "during" + string(rune('0'+i))
		m.must("run", "--name", name, "--", "sh", "-c", "exit 4")
		m.must("wait", name, "--state", "exited", "--timeout", "10s")
	}
	m.must("run", "--name", "after", "--", "sh", "-c", "exit 4")
	until(t, 60*time.Second, "m's new pane seen on h2 after h1 was killed", func() bool {
		return strings.Contains(h2.must("ls", "--fleet"), "after")
	})
	t.Logf("m's new pane on h2 %v after a hub's SIGKILL", time.Since(killed).Round(10*time.Millisecond))
	until(t, 60*time.Second, "m reachable again from h2 and h3", func() bool {
		return h2.fleetHosts()["m"].Reachable && h3.fleetHosts()["m"].Reachable
	})
	t.Logf("m reachable from both remaining hubs %v after a hub's SIGKILL", time.Since(killed).Round(10*time.Millisecond))
	// A command to another host, answered through the shrunk cluster.
	h3.must("wait", "m:after", "--state", "exited", "--timeout", "20s")
	// A job for any host runs on m.
	var jobOut, jobErr string
	until(t, 60*time.Second, "a fleet job run by m after h1 was killed", func() bool {
		jobOut, jobErr, _ = h2.run("exec", "--fleet", "--agent", "claude", "--", corralBin, "fake-agent", "--help")
		if !strings.Contains(jobOut+jobErr, "host m runs the job") {
			t.Logf("a fleet job after a hub was killed:\nstdout %q\nstderr %q", jobOut, jobErr)
			return false
		}
		return true
	})
	t.Logf("a fleet job ran %v after a hub's SIGKILL", time.Since(killed).Round(10*time.Millisecond))
	// Every event m logged is in the stream once, in order.
	var local []uint64
	for _, l := range strings.Split(strings.TrimSpace(m.must("events", "--since", "1h")), "\n") {
		var ev struct{ Seq uint64 }
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		local = append(local, ev.Seq)
	}
	var seqs []uint64
	until(t, 30*time.Second, "m's events all in the fleet's stream", func() bool {
		seqs = hostSeqs(t, h3, "m")
		return len(seqs) >= len(local)
	})
	if len(seqs) != len(local) {
		t.Fatalf("the stream holds %d of m's events, m logged %d: %v vs %v", len(seqs), len(local), seqs, local)
	}
	for i := range seqs {
		if seqs[i] != local[i] {
			t.Fatalf("event %d: seq %d in the stream, %d in m's log: %v vs %v", i, seqs[i], local[i], seqs, local)
		}
	}
	t.Logf("%d events from m, sequence %d…%d, none lost or repeated", len(seqs), seqs[0], seqs[len(seqs)-1])
}
