package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// Without a fleet configured the daemon listens on no TCP port, and the
// fleet's commands say how to make one.
func TestNoFleetNoListener(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, errs, code := e.run("fleet", "status")
	if code == 0 || !strings.Contains(errs, "corral fleet init") {
		t.Fatalf("fleet status outside a fleet: exit %d %q", code, errs)
	}
	if _, errs, code := e.run("ls", "--fleet"); code == 0 || !strings.Contains(errs, "in no fleet") {
		t.Fatalf("ls --fleet outside a fleet: exit %d %q", code, errs)
	}
	if n := tcpListeners(t, e.daemonPID()); n != 0 {
		t.Fatalf("the daemon listens on %d TCP sockets without a fleet", n)
	}
}

// tcpListeners counts the TCP sockets in LISTEN state a process holds.
func tcpListeners(t *testing.T, pid int) int {
	t.Helper()
	listening := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(data), "\n")[1:] {
			fs := strings.Fields(l)
			if len(fs) > 9 && fs[3] == "0A" { // LISTEN
				listening[fs[9]] = true
			}
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); ok && listening[strings.TrimSuffix(inode, "]")] {
			n++
		}
	}
	return n
}

// One job on each matching host, the fleet's jobs listed, panes
// filtered by host and state, and a host gone for good forgotten.
func fleetEverywhere(t *testing.T) {
	proctest.Slow(t, "three daemons in a fleet, about 7 s")
	t.Parallel()
	hub, w1, w2 := newEnv(t), newEnv(t), newEnv(t)
	out := hub.must("fleet", "init", "--listen", "127.0.0.1:0", "--name", "hub", "--max-jobs", "0")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	join := strings.Fields(lines[len(lines)-1])
	w1.must(append(append([]string{"fleet"}, join[2:]...), "--name", "web-1", "--max-jobs", "1")...)
	w2.must(append(append([]string{"fleet"}, join[2:]...), "--name", "web-2", "--max-jobs", "1")...)
	waitFor(t, 10*time.Second, "both hosts on the hub", func() bool {
		h := hub.fleetHosts()
		return h["web-1"].Reachable && h["web-2"].Reachable
	})
	// A job on each host matching: every line with its host, the worst
	// exit code.
	_, _, local := hub.run("exec", "--agent", "claude", "--", corralBin, "fake-agent", "--help")
	jout, jerr, code := hub.run("exec", "--fleet", "--hosts", "web-*", "--json", "--agent", "claude", "--", corralBin, "fake-agent", "--help")
	if code != local || code == 0 {
		t.Fatalf("exec on each host: exit %d (a local run: %d)\n%s\n%s", code, local, jout, jerr)
	}
	seen := map[string]bool{}
	var last struct {
		Type  string `json:"type"`
		Hosts []struct {
			Host     string `json:"host"`
			ExitCode int    `json:"exit_code"`
		} `json:"hosts"`
	}
	for _, l := range strings.Split(strings.TrimSpace(jout), "\n") {
		var v struct{ Host, Type string }
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		seen[v.Host] = true
		if v.Type == "outcome" {
			_ = json.Unmarshal([]byte(l), &last)
		}
	}
	if !seen["web-1"] || !seen["web-2"] || last.Type != "outcome" || len(last.Hosts) != 2 || last.Hosts[0].ExitCode != local {
		t.Fatalf("exec on each host: hosts %v, outcome %+v\n%s", seen, last, jout)
	}
	// Without --json: each host's lines under its name, its end said on
	// stderr (a plain command is no agent: it ends with its exit status).
	tout, terr, tcode := hub.run("exec", "--fleet", "--all-hosts", "--agent", "auto", "--", "sh", "-c", "echo hello; exit 4")
	if tcode != 4 || !strings.Contains(tout, "[web-1]\n") || !strings.Contains(tout, "[web-2]\n") || strings.Contains(tout, "host_outcome") ||
		!strings.Contains(terr, "host web-1: error, exit 4") || !strings.Contains(terr, "host web-2: error, exit 4") || !strings.Contains(terr, "2 of 2 hosts failed") {
		t.Fatalf("exec on all hosts: exit %d\n%s\n%s", tcode, tout, terr)
	}
	if _, errs, code := hub.run("exec", "--fleet", "--hosts", "db-*", "--agent", "auto", "--", "true"); code != 69 || !strings.Contains(errs, "nothing queued") {
		t.Fatalf("no host matching: exit %d %q", code, errs)
	}
	// A running job is listed with its host.
	cmd := exec.Command(corralBin, "exec", "--fleet", "--host", "web-1", "--agent", "auto", "--", "sleep", "30")
	cmd.Env = hub.vars
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	waitFor(t, 15*time.Second, "the job listed as running on web-1", func() bool {
		var rows []struct {
			Host     string `json:"host"`
			State    string `json:"state"`
			FleetJob string `json:"fleet_job"`
		}
		_ = json.Unmarshal([]byte(hub.must("jobs", "--fleet", "--json")), &rows)
		return len(rows) == 1 && rows[0].Host == "web-1" && rows[0].State != "queued" && strings.HasPrefix(rows[0].FleetJob, "fj")
	})
	if local := w1.must("jobs", "--json"); !strings.Contains(local, `"host": "web-1"`) {
		t.Fatalf("web-1's own jobs: %s", local)
	}
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("exec --fleet did not end after an interrupt")
	}
	// Panes filtered by host and state.
	w2.must("run", "--name", "x", "--", "sh", "-c", "exit 3")
	w2.must("wait", "x", "--state", "exited", "--timeout", "10s")
	var panes []struct{ Host, Name, State string }
	waitFor(t, 10*time.Second, "web-2:x exited, alone in the filtered list", func() bool {
		panes = nil
		_ = json.Unmarshal([]byte(hub.must("ls", "--fleet", "--host", "web-2", "--state", "exited", "--json")), &panes)
		return len(panes) == 1 && panes[0].Name == "x"
	})
	if out := hub.must("ls", "--fleet", "--host", "web-1", "--state", "blocked", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("web-1's blocked panes: %s", out)
	}
	// A host gone for good is forgotten; a connected one is not.
	if _, errs, code := hub.run("fleet", "forget", "web-1"); code == 0 || !strings.Contains(errs, "--revoke") {
		t.Fatalf("forget a connected host: exit %d %q", code, errs)
	}
	w2.must("shutdown")
	waitFor(t, 10*time.Second, "web-2 unreachable, for how long", func() bool {
		return strings.Contains(hub.must("fleet", "status"), "false, for ") &&
			strings.Contains(hub.must("ls", "--fleet"), "\n# web-2  unreachable for ")
	})
	// Each host has its line in ls --fleet, one with no pane too.
	ls := hub.must("ls", "--fleet")
	for h := range hub.fleetHosts() {
		if strings.Count(ls, "\n# "+h+"  ") != 1 {
			t.Fatalf("ls --fleet has not one line for host %s:\n%s", h, ls)
		}
	}
	hub.must("fleet", "forget", "web-2")
	waitFor(t, 10*time.Second, "web-2 gone from the hub's views", func() bool {
		_, ok := hub.fleetHosts()["web-2"]
		return !ok && !strings.Contains(hub.must("ls", "--fleet"), "web-2")
	})
	// Unreachable longer than the hub's setting: forgotten by the hub.
	if _, errs, code := w1.run("fleet", "set", "--forget-after", "1s"); code == 0 || !strings.Contains(errs, "hub") {
		t.Fatalf("fleet set on a member: exit %d %q", code, errs)
	}
	hub.must("fleet", "set", "--forget-after", "1s")
	if cfg, err := os.ReadFile(filepath.Join(hub.dir, "state", "fleet", "config.json")); err != nil || !strings.Contains(string(cfg), `"forget_after_ms": 1000`) {
		t.Fatalf("the hub's config: %s %v", cfg, err)
	}
	w1.must("shutdown")
	waitFor(t, 15*time.Second, "web-1 forgotten once unreachable over 1s", func() bool {
		_, ok := hub.fleetHosts()["web-1"]
		return !ok
	})
}

// A terminal here joined to another host's pane: its screen, keys that
// reach the agent, and the detach key.
func TestFleetAttach(t *testing.T) {
	t.Parallel()
	hub, b := fleetPair(t)
	b.must("run", "--name", "fp", "--agent", "claude-code", "--", corralBin, "fake-agent", "--command", "make test")
	b.must("wait", "fp", "--state", "idle", "--timeout", "10s")
	waitFor(t, 10*time.Second, "b:fp on the hub", func() bool { return hub.inFleet(onHost("b")) })
	cmd := exec.Command(corralBin, "attach", "b:fp")
	cmd.Env, cmd.Dir = hub.vars, hub.dir
	r, in, _ := os.Pipe()
	var out, errs lockedBuffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, &out, &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer in.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	waitFor(t, 15*time.Second, "b:fp's screen through the fleet", func() bool { return strings.Contains(out.String(), "? for shortcuts") })
	in.WriteString("ask\r")
	b.must("wait", "fp", "--state", "blocked", "--timeout", "15s")
	waitFor(t, 10*time.Second, "the prompt on the attached terminal", func() bool { return strings.Contains(out.String(), "proceed?") })
	in.WriteString("1")
	b.must("wait", "fp", "--state", "done,idle", "--timeout", "15s")
	in.WriteString("\x1c")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("attach: %v: %s", err, errs.String())
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("attach did not detach")
	}
	if !strings.Contains(errs.String(), "[detached from b:fp]") {
		t.Fatalf("stderr %q", errs.String())
	}
	if p := b.pane("fp"); p.State == "exited" {
		t.Fatal("detaching ended the pane")
	}
}

// fleet set --max-jobs changes what a host takes at once, without leaving
// the fleet; a plain program runs as a fleet job and ends with its exit
// status, as it does locally; fleet init on loopback warns.
func TestFleetSetMaxJobsAndPlainJobs(t *testing.T) {
	t.Parallel()
	hub, b := newEnv(t), newEnv(t)
	out, errs, code := hub.run("fleet", "init", "--listen", "127.0.0.1:0", "--name", "hub", "--max-jobs", "0")
	if code != 0 || !strings.Contains(errs, "works on this machine only") || !strings.Contains(errs, "--listen 0.0.0.0:7422") {
		t.Fatalf("fleet init on loopback: exit %d, stderr %q", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	join := strings.Fields(lines[len(lines)-1])
	b.must(append(append([]string{"fleet"}, join[2:]...), "--name", "b", "--max-jobs", "0")...)
	maxJobs := func() int {
		var hs []struct {
			Host      string `json:"host"`
			Reachable bool   `json:"reachable"`
			MaxJobs   int    `json:"max_jobs"`
		}
		if err := json.Unmarshal([]byte(hub.must("fleet", "status", "--json")), &hs); err != nil {
			t.Fatal(err)
		}
		for _, h := range hs {
			if h.Host == "b" && h.Reachable {
				return h.MaxJobs
			}
		}
		return -1
	}
	waitFor(t, 5*time.Second, "b on the hub", func() bool { return maxJobs() == 0 })
	pid := b.daemonPID()

	// A job for any host waits while no host takes jobs, and runs once b does.
	job := exec.Command(corralBin, "exec", "--fleet", "--", "sh", "-c", "echo plain-out; exit 0")
	job.Env, job.Dir = hub.vars, hub.dir
	var jobOut, jobErr bytes.Buffer
	job.Stdout, job.Stderr = &jobOut, &jobErr
	if err := job.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- job.Wait() }()
	defer func() {
		if job.ProcessState == nil {
			_ = job.Process.Kill()
			<-done
		}
	}()
	waitFor(t, 10*time.Second, "the job queued", func() bool { return strings.Contains(hub.must("jobs", "--fleet"), "queued") })
	if set := b.must("fleet", "set", "--max-jobs", "1"); !strings.Contains(set, "up to 1 fleet job") {
		t.Fatalf("fleet set --max-jobs 1: %q", set)
	}
	select {
	case err := <-done:
		if err != nil || jobOut.String() != "plain-out\n" || !strings.Contains(jobErr.String(), "host b runs the job") {
			t.Fatalf("the plain job: %v\nstdout %q\nstderr %q", err, jobOut.String(), jobErr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the job was not taken after fleet set --max-jobs 1\nstdout %q\nstderr %q", jobOut.String(), jobErr.String())
	}
	waitFor(t, 5*time.Second, "b's max_jobs 1 in fleet status", func() bool { return maxJobs() == 1 })
	if cfg, err := os.ReadFile(filepath.Join(b.dir, "state", "fleet", "config.json")); err != nil || !strings.Contains(string(cfg), `"max_jobs": 1`) {
		t.Fatalf("b's fleet config after fleet set: %s %v", cfg, err)
	}
	if got := b.daemonPID(); got != pid {
		t.Fatalf("b's daemon changed: pid %d, then %d", pid, got)
	}

	// A plain program's exit status, on another host as here.
	for _, tc := range []struct {
		script string
		code   int
	}{{"exit 0", 0}, {"echo x; exit 3", 3}} {
		_, lerrs, lcode := hub.run("exec", "--", "sh", "-c", tc.script)
		_, ferrs, fcode := hub.run("exec", "--fleet", "--host", "b", "--", "sh", "-c", tc.script)
		if lcode != tc.code || fcode != tc.code {
			t.Fatalf("%q: local exit %d (%q), fleet exit %d (%q); want %d", tc.script, lcode, lerrs, fcode, ferrs, tc.code)
		}
	}

	// Back to none: the hub refuses a job addressed to b.
	b.must("fleet", "set", "--max-jobs", "0")
	waitFor(t, 5*time.Second, "b's max_jobs 0 in fleet status", func() bool { return maxJobs() == 0 })
	if _, errs, code := hub.run("exec", "--fleet", "--host", "b", "--", "true"); code == 0 || !strings.Contains(errs, "takes no fleet jobs") {
		t.Fatalf("a job for b at --max-jobs 0: exit %d %q", code, errs)
	}
	if _, errs, code := hub.run("fleet", "set", "--max-jobs", "-1"); code != 2 || !strings.Contains(errs, "--max-jobs") {
		t.Fatalf("fleet set --max-jobs -1: exit %d %q", code, errs)
	}
	if _, errs, code := b.run("fleet", "set", "--forget-after", "1h"); code == 0 || !strings.Contains(errs, "hub") {
		t.Fatalf("fleet set --forget-after on a member: exit %d %q", code, errs)
	}
}

// fleet status says which hosts are observe-only and which take jobs for
// any host; an observe-only host takes jobs only when invited to.
func TestFleetStatusAccess(t *testing.T) {
	t.Parallel()
	hub, b := fleetPair(t)
	invite := func(name string, flags ...string) *env {
		out := hub.must(append([]string{"fleet", "invite", name, "--observe-only"}, flags...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		join := strings.Fields(lines[len(lines)-1])
		e := newEnv(t)
		e.must(append(append([]string{"fleet"}, join[2:]...), "--max-jobs", "1")...)
		return e
	}
	o := invite("o")
	invite("p", "--take-jobs")
	type row struct {
		Host        string `json:"host"`
		Reachable   bool   `json:"reachable"`
		MaxJobs     int    `json:"max_jobs"`
		Access      string `json:"access"`
		AnyHostJobs bool   `json:"any_host_jobs"`
	}
	want := map[string]row{
		"hub": {"hub", true, 0, "control", false},
		"b":   {"b", true, 1, "control", true},
		"o":   {"o", true, 0, "observe-only", false},
		"p":   {"p", true, 1, "observe-only+jobs", true},
	}
	waitFor(t, 10*time.Second, "every host's access in fleet status", func() bool {
		var rows []row
		if err := json.Unmarshal([]byte(b.must("fleet", "status", "--json")), &rows); err != nil {
			t.Fatal(err)
		}
		got := map[string]row{}
		for _, r := range rows {
			got[r.Host] = r
		}
		for h, w := range want {
			if got[h] != w {
				return false
			}
		}
		return true
	})
	text := hub.must("fleet", "status")
	for _, w := range []string{"ANY-HOST JOBS", "ACCESS", "observe-only+jobs"} {
		if !strings.Contains(text, w) {
			t.Fatalf("fleet status without %q:\n%s", w, text)
		}
	}
	// o takes no job even when told to take some; p does.
	if _, errs, code := o.run("fleet", "set", "--max-jobs", "2"); code != 0 || !strings.Contains(errs, "--take-jobs") {
		t.Fatalf("fleet set --max-jobs on an observe-only host: exit %d %q", code, errs)
	}
	if _, errs, code := hub.run("exec", "--fleet", "--host", "o", "--", "true"); code == 0 || !strings.Contains(errs, "takes no fleet jobs") {
		t.Fatalf("a job for o: exit %d %q", code, errs)
	}
	if _, errs, code := hub.run("exec", "--fleet", "--host", "p", "--", "sh", "-c", "exit 5"); code != 5 {
		t.Fatalf("a job for p: exit %d %q", code, errs)
	}
	if _, errs, code := hub.run("fleet", "invite", "q", "--take-jobs"); code != 2 || !strings.Contains(errs, "--observe-only") {
		t.Fatalf("--take-jobs without --observe-only: exit %d %q", code, errs)
	}
}
