package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/fleet"
	"github.com/corral-dev/corral/internal/proctest"
)

func (e *env) fleetStatusFull() fleet.Status {
	e.t.Helper()
	var st fleet.Status
	c := client.New(filepath.Join(e.dir, "s.sock"))
	if err := c.Do(context.Background(), "GET", "/v1/fleet/status", nil, &st); err != nil {
		e.t.Fatal(err)
	}
	return st
}

// streamsInfo says, from a hub's server, where the fleet's pane and
// hosts buckets stand: leader, peers, messages.
func streamsInfo(e *env) string {
	var hf struct {
		AdminToken string `json:"admin_token"`
	}
	b, err := os.ReadFile(filepath.Join(fleet.Dir(filepath.Join(e.dir, "state")), "hub.json"))
	if err != nil || json.Unmarshal(b, &hf) != nil {
		return fmt.Sprintf("no hub.json: %v", err)
	}
	st := e.fleetStatusFull()
	url := st.URL
	nc, err := nats.Connect(url, nats.Token(hf.AdminToken), nats.Name("corral:diag"), nats.CustomInboxPrefix(fleet.InboxPrefix(st.Name)))
	if err != nil {
		return fmt.Sprintf("connect %s: %v", url, err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	var out []string
	for _, name := range []string{"KV_" + fleet.PanesBucket, "KV_" + fleet.HostsBucket} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		s, err := js.Stream(ctx, name)
		cancel()
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		i := s.CachedInfo()
		c, _ := json.Marshal(i.Cluster)
		out = append(out, fmt.Sprintf("%s from %s: R%d msgs %d seq %d..%d cluster %s", name, url, i.Config.Replicas, i.State.Msgs, i.State.FirstSeq, i.State.LastSeq, c))
	}
	return strings.Join(out, "\n")
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
// member: one hub killed -9 (each of the three in turn, the first, seed
// hub too), and the fleet goes on: a pane made right after the kill is
// in every remaining view, events keep flowing with none lost, a command
// to another host is answered, a job runs.
func fleetHubClusterSurvivesAKill(t *testing.T) {
	proctest.Slow(t, "three hub clusters, about 25 s each")
	t.Parallel()
	run, wait := atOnce(t) // each kill has its own cluster of daemons
	defer wait()
	for victim := range 3 {
		run(fmt.Sprintf("h%d", victim+1), func(t *testing.T) {
			hubKill(t, victim)
		})
	}
}

func hubKill(t *testing.T, victim int) {
	h1, h2, h3, m := newEnv(t), newEnv(t), newEnv(t), newEnv(t)
	hubs := []*env{h1, h2, h3}
	if os.Getenv("CORRAL_FLEET_DEBUG") != "" {
		for _, e := range hubs {
			e.vars = append(e.vars, "CORRAL_FLEET_DEBUG=1")
		}
	}
	var info fleet.JoinInfo
	decode := func(out string) fleet.JoinInfo {
		var i fleet.JoinInfo
		if err := json.Unmarshal([]byte(out), &i); err != nil {
			t.Fatalf("%v: %q", err, out)
		}
		return i
	}
	info = decode(h1.must("fleet", "init", "--listen", "127.0.0.1:0", "--name", "h1", "--max-jobs", "0", "--cluster-listen", proctest.FreeLoopbackAddr(t), "--json"))
	if !strings.Contains(info.JoinHub, "--hub-token chj_") {
		t.Fatalf("no join-hub command: %+v", info)
	}
	joinHub := func(e *env, name, cmd string) fleet.JoinInfo {
		f := strings.Fields(cmd)
		// corral fleet join-hub URLS --hub-token T [--ca-fingerprint F] --cluster-listen HOST:PORT
		args := append([]string{"fleet"}, f[2:len(f)-1]...)
		args = append(args, proctest.FreeLoopbackAddr(t), "--name", name, "--listen", "127.0.0.1:0", "--max-jobs", "0", "--json")
		return decode(e.must(args...))
	}
	info2 := joinHub(h2, "h2", info.JoinHub)
	info3 := joinHub(h3, "h3", info2.JoinHub)
	if n := len(strings.Split(info3.URL, ",")); n < 2 {
		t.Fatalf("the third hub's join command names %d hubs: %s", n, info3.Join)
	}
	waitFor(t, 60*time.Second, "the fleet's buckets and streams at 3 replicas", func() bool {
		return h3.fleetStatusFull().Replicas == 3
	})
	var urls []string
	for _, i := range []fleet.JoinInfo{info, info2, info3} {
		urls = append(urls, strings.Split(i.URL, ",")[0])
	}
	m.must("fleet", "join", strings.Join(urls, ","), "--token", info.Token, "--name", "m", "--max-jobs", "1")
	waitFor(t, 30*time.Second, "m on every hub", func() bool {
		for _, h := range hubs {
			if !h.fleetHosts()["m"].Reachable {
				return false
			}
		}
		return true
	})
	m.must("run", "--name", "before", "--", "sh", "-c", "exit 3")
	m.must("wait", "before", "--state", "exited", "--timeout", "10s")
	waitFor(t, 30*time.Second, "m's pane on every hub", func() bool {
		for _, h := range hubs {
			if !h.inFleet(named("before")) {
				return false
			}
		}
		return true
	})
	dead := hubs[victim]
	left := slices.Delete(slices.Clone(hubs), victim, victim+1)
	if err := syscall.Kill(dead.daemonPID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	defer func() {
		if t.Failed() {
			for _, e := range append(slices.Clone(left), m) {
				out, errs, _ := e.run("fleet", "status")
				b, _ := json.Marshal(e.fleetStatusFull().Member)
				t.Logf("%s%s\n%s", out, errs, b)
				t.Log(e.must("ls", "--fleet"))
			}
			for _, e := range left {
				t.Log(streamsInfo(e))
			}
			if keep := os.Getenv("CORRAL_TEST_KEEP_LOGS"); keep != "" {
				for i, e := range []*env{h1, h2, h3, m} {
					b, _ := os.ReadFile(filepath.Join(e.dir, "state", "daemon.log"))
					_ = os.WriteFile(filepath.Join(keep, fmt.Sprintf("%s-%d.log", strings.ReplaceAll(t.Name(), "/", "-"), i+1)), b, 0o600)
				}
			}
		}
	}()
	// A pane made right after the kill, in every view left (and m's own):
	// the views are fresh again.
	m.must("run", "--name", "fresh", "--", "sh", "-c", "exit 4")
	views := append(slices.Clone(left), m)
	fresh := make([]time.Duration, len(views))
	waitFor(t, 60*time.Second, "m's pane made after the kill in every view left", func() bool {
		all := true
		for i, e := range views {
			if fresh[i] == 0 && e.inFleet(named("fresh")) {
				fresh[i] = time.Since(killed).Round(10 * time.Millisecond)
			}
			all = all && fresh[i] != 0
		}
		return all
	})
	t.Logf("views fresh %v after a hub's SIGKILL (a pane made after the kill in every view left: the hubs' %v, m's own %v)",
		slices.Max(fresh), fresh[:len(left)], fresh[len(left)])
	// Events made while the cluster settles.
	for i := range 5 {
		name := "during" + string(rune('0'+i))
		m.must("run", "--name", name, "--", "sh", "-c", "exit 4")
		m.must("wait", name, "--state", "exited", "--timeout", "10s")
	}
	m.must("run", "--name", "after", "--", "sh", "-c", "exit 4")
	waitFor(t, 60*time.Second, "m's last pane in every view left", func() bool {
		for _, e := range left {
			if !e.inFleet(named("after")) {
				return false
			}
		}
		return true
	})
	waitFor(t, 60*time.Second, "m reachable from every hub left", func() bool {
		for _, e := range left {
			if !e.fleetHosts()["m"].Reachable {
				return false
			}
		}
		return true
	})
	t.Logf("m reachable from both remaining hubs %v after a hub's SIGKILL", time.Since(killed).Round(10*time.Millisecond))
	// A command to another host, answered through the shrunk cluster. A
	// heartbeat m sent before the kill reads reachable for a few seconds
	// while the cluster elects new stream leaders, and a command to a host
	// whose heartbeats have stopped fails at once (exit 69): try until m's
	// heartbeats come through again.
	waitFor(t, 60*time.Second, "a command to m through the shrunk cluster", func() bool {
		out, errOut, code := left[1].run("wait", "m:after", "--state", "exited", "--timeout", "20s")
		if code != 0 && code != 69 {
			t.Fatalf("corral wait m:after: exit %d: %s%s", code, out, errOut)
		}
		if code != 0 {
			t.Logf("corral wait m:after: exit %d: %s%s", code, out, errOut)
		}
		return code == 0
	})
	t.Logf("a command to m answered %v after a hub's SIGKILL", time.Since(killed).Round(10*time.Millisecond))
	// A job for any host runs on m.
	var jobOut, jobErr string
	waitFor(t, 60*time.Second, "a fleet job run by m after a hub was killed", func() bool {
		jobOut, jobErr, _ = left[0].run("exec", "--fleet", "--agent", "claude", "--", corralBin, "fake-agent", "--help")
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
	waitFor(t, 30*time.Second, "m's events all in the fleet's stream", func() bool {
		seqs = hostSeqs(t, left[1], "m")
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
