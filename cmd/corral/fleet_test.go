package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/fleet"
	"github.com/corral-dev/corral/internal/proctest"
)

type fleetHost struct {
	Host      string `json:"host"`
	Reachable bool   `json:"reachable"`
	Panes     int    `json:"panes"`
}

// inFleet says whether one of the fleet's panes in e's view (corral ls
// --fleet's) is one ok takes: looked up through the socket, for the polls.
func (e *env) inFleet(ok func(fleet.PaneRecord) bool) bool {
	e.t.Helper()
	var ps []fleet.PaneRecord
	e.lookOrRun("/v1/fleet/panes", &ps, "ls", "--fleet", "--json")
	return slices.ContainsFunc(ps, ok)
}

func onHost(host string) func(fleet.PaneRecord) bool {
	return func(p fleet.PaneRecord) bool { return p.Host == host }
}

func named(name string) func(fleet.PaneRecord) bool {
	return func(p fleet.PaneRecord) bool { return p.Name == name }
}

func (e *env) fleetHosts() map[string]fleetHost {
	e.t.Helper()
	var st struct {
		Hosts []fleetHost `json:"hosts"`
	}
	if !e.look("/v1/fleet/status", &st) {
		if err := json.Unmarshal([]byte(e.must("fleet", "status", "--json")), &st.Hosts); err != nil {
			e.t.Fatal(err)
		}
	}
	out := map[string]fleetHost{}
	for _, h := range st.Hosts {
		out[h.Host] = h
	}
	return out
}

// A hub and two members as separate daemons: listing, cross-host
// wait/answer/send refusal, a fleet job, a member killed.
func TestFleetThreeDaemons(t *testing.T) {
	proctest.Slow(t, "three daemons in a fleet, about 7 s")
	t.Parallel()
	hub, a, b := newEnv(t), newEnv(t), newEnv(t)
	out := hub.must("fleet", "init", "--listen", "127.0.0.1:0", "--name", "hub", "--max-jobs", "0")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	join := strings.Fields(lines[len(lines)-1])
	if len(join) != 6 || join[1] != "fleet" || join[2] != "join" || join[4] != "--token" {
		t.Fatalf("the last line is not the join command: %q", out)
	}
	url, token := join[3], join[5]
	if n := tcpListeners(t, hub.daemonPID()); n != 1 {
		t.Fatalf("the hub's daemon listens on %d TCP sockets, want 1 (its NATS server)", n)
	}
	a.must("fleet", "join", url, "--token", token, "--name", "a", "--max-jobs", "0")
	b.must("fleet", "join", url, "--token", token, "--name", "b", "--max-jobs", "1")
	// A host that joined with the fleet token keeps its own credential.
	if cfg, err := os.ReadFile(filepath.Join(b.dir, "state", "fleet", "config.json")); err != nil || !strings.Contains(string(cfg), `"token": "cht_b_`) || strings.Contains(string(cfg), token) {
		t.Fatalf("b's fleet config: %s %v", cfg, err)
	}
	// Another daemon under a name in use is refused.
	twin := newEnv(t)
	if _, errs, code := twin.run("fleet", "join", url, "--token", token, "--name", "b"); code == 0 || !strings.Contains(errs, "pick another --name") {
		t.Fatalf("a second b: exit %d %q", code, errs)
	}
	// A wrong token is refused with a clear error.
	bad := newEnv(t)
	if _, errs, code := bad.run("fleet", "join", url, "--token", "cft_wrong", "--name", "x"); code == 0 || !strings.Contains(errs, "refused") {
		t.Fatalf("wrong token: exit %d %q", code, errs)
	}
	a.must("run", "--name", "fp", "--agent", "claude-code", "--", corralBin, "fake-agent")
	waitFor(t, 10*time.Second, "a:fp on the hub's list", func() bool {
		return hub.inFleet(onHost("a"))
	})
	// Hosts without panes have their line too.
	if ls := hub.must("ls", "--fleet"); !strings.Contains(ls, "\n# hub  reachable, no panes\n") || !strings.Contains(ls, "\n# b  reachable, no panes, jobs 0/1\n") {
		t.Fatalf("ls --fleet, hosts without panes:\n%s", ls)
	}
	var panes []struct {
		Host, ID, Name, State string
	}
	if err := json.Unmarshal([]byte(b.must("ls", "--fleet", "--json")), &panes); err != nil {
		t.Fatal(err)
	}
	if len(panes) != 1 || panes[0].Host != "a" || panes[0].Name != "fp" {
		t.Fatalf("b's fleet list: %+v", panes)
	}
	// Cross-host commands, with the same guards and exit codes.
	hub.must("wait", "a:fp", "--state", "idle", "--timeout", "10s")
	hub.must("send", "a:fp", "ask", "--enter")
	b.must("wait", "a:fp", "--state", "blocked", "--timeout", "10s")
	if _, errs, code := b.run("send", "a:fp", "rm -rf /", "--enter"); code != 3 || !strings.Contains(errs, "blocked") {
		t.Fatalf("send to a blocked pane on another host: exit %d %q", code, errs)
	}
	if s := hub.must("screen", "a:"+panes[0].ID); !strings.Contains(s, "Do you want to proceed?") {
		t.Fatalf("screen across hosts: %q", s)
	}
	hub.must("answer", "a:fp", "yes")
	b.must("wait", "a:fp", "--state", "done", "--timeout", "10s")
	if _, errs, code := hub.run("answer", "a:fp", "yes"); code != 3 {
		t.Fatalf("answer while not blocked: exit %d %q", code, errs)
	}
	if _, errs, code := hub.run("screen", "nohost:fp"); code == 0 || !strings.Contains(errs, "no such host") {
		t.Fatalf("a host not in the fleet: exit %d %q", code, errs)
	}
	// A fleet job runs on the host with capacity and reports as a local one.
	jobOut, jobErr, code := a.run("exec", "--fleet", "--agent", "claude", "--", corralBin, "fake-agent", "--help")
	if !strings.Contains(jobOut+jobErr, "host b runs the job") {
		t.Fatalf("fleet job: exit %d\nstdout %q\nstderr %q", code, jobOut, jobErr)
	}
	local, _, lcode := a.run("exec", "--agent", "claude", "--", corralBin, "fake-agent", "--help")
	if lcode != code || lcode == 0 {
		t.Fatalf("local exit %d, fleet exit %d", lcode, code)
	}
	// A member killed: unreachable within 5 s.
	waitFor(t, 5*time.Second, "b reachable", func() bool { return hub.fleetHosts()["b"].Reachable })
	_ = local
	b.must("shutdown")
	start := time.Now()
	waitFor(t, 5*time.Second, "b unreachable", func() bool { h, ok := hub.fleetHosts()["b"]; return ok && !h.Reachable })
	t.Logf("b unreachable %v after its daemon stopped", time.Since(start).Round(time.Millisecond))
	// The hub's members see an observe-only credential refused commands.
	hub.must("fleet", "invite", "obs", "--observe-only")
	if _, errs, code := hub.run("fleet", "invite", "obs", "--revoke"); code != 0 {
		t.Fatalf("revoke: %q", errs)
	}
	a.must("fleet", "leave")
	waitFor(t, 5*time.Second, "a's panes gone from the fleet", func() bool { return !hub.inFleet(onHost("a")) })
}

// fleetPair starts a hub and one member b (taking jobs) and returns them.
func fleetPair(t *testing.T, initFlags ...string) (hub, b *env) {
	t.Helper()
	hub, b = newEnv(t), newEnv(t)
	out := hub.must(append([]string{"fleet", "init", "--listen", "127.0.0.1:0", "--name", "hub", "--max-jobs", "0"}, initFlags...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	join := strings.Fields(lines[len(lines)-1])
	if len(join) < 6 || join[0] != "corral" || join[2] != "join" {
		t.Fatalf("the last line is not the join command: %q", out)
	}
	b.must(append(append([]string{"fleet"}, join[2:]...), "--name", "b", "--max-jobs", "1")...)
	waitFor(t, 5*time.Second, "b on the hub", func() bool { return hub.fleetHosts()["b"].Reachable })
	return hub, b
}

func (e *env) daemonPID() int {
	e.t.Helper()
	var st struct {
		PID int `json:"pid"`
	}
	c := client.New(filepath.Join(e.dir, "s.sock"))
	if err := c.Do(context.Background(), "GET", "/v1/status", nil, &st); err != nil {
		e.t.Fatal(err)
	}
	return st.PID
}

// A member keeps its events while the hub restarts and sends them after:
// none twice, none lost.
func TestFleetMemberResumesAfterHubRestart(t *testing.T) {
	t.Parallel()
	hub, b := fleetPair(t, "--tls") // the restarted hub keeps its CA
	if !strings.Contains(hub.must("fleet", "status"), "tls://") {
		t.Fatal("the hub does not serve TLS")
	}
	b.must("run", "--name", "one", "--", "sh", "-c", "exit 3")
	b.must("wait", "one", "--state", "exited", "--timeout", "10s")
	hub.must("shutdown")
	// Commands for the fleet say at once that the hub is gone (exit 69),
	// and that the job was not queued.
	waitFor(t, 10*time.Second, "b to see the hub gone", func() bool {
		_, errs, code := b.run("exec", "--fleet", "--agent", "claude", "--", "sh", "-c", "true")
		return code == 69 && strings.Contains(errs, "hub is unreachable") && strings.Contains(errs, "not queued")
	})
	// At once: not after the 10 s a command sent through the hub waits for
	// its answer, nor the wait's --timeout. The bounds are below those, not
	// tighter: a corral command alone took 3.5 s at load 50.
	start := time.Now()
	if _, errs, code := b.run("screen", "hub:nosuch"); code != 69 || !strings.Contains(errs, "hub is unreachable") || time.Since(start) > 8*time.Second {
		t.Fatalf("a remote screen with the hub down: exit %d after %v: %q", code, time.Since(start), errs)
	}
	start = time.Now()
	if _, errs, code := b.run("wait", "hub:nosuch", "--state", "idle", "--timeout", "20s"); code != 69 || time.Since(start) > 10*time.Second {
		t.Fatalf("a remote wait with the hub down: exit %d after %v: %q", code, time.Since(start), errs)
	}
	// While the hub is down.
	for _, name := range []string{"two", "three"} {
		b.must("run", "--name", name, "--", "sh", "-c", "exit 4")
		b.must("wait", name, "--state", "exited", "--timeout", "10s")
	}
	hub.must("fleet", "status") // starts the hub's daemon again, and its fleet from its config
	var local []struct{ Seq uint64 }
	for _, l := range strings.Split(strings.TrimSpace(b.must("events", "--since", "1h")), "\n") {
		var ev struct{ Seq uint64 }
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		local = append(local, ev)
	}
	var seqs []uint64
	waitFor(t, 15*time.Second, "b's events all in the fleet's stream", func() bool {
		seqs = nil
		for _, l := range strings.Split(strings.TrimSpace(hub.must("events", "b", "--since", "1h")), "\n") {
			var ev struct {
				Host string
				Seq  uint64
			}
			if l != "" && json.Unmarshal([]byte(l), &ev) == nil && ev.Host == "b" {
				seqs = append(seqs, ev.Seq)
			}
		}
		return len(seqs) >= len(local)
	})
	if len(seqs) != len(local) {
		t.Fatalf("the stream holds %d of b's events, b logged %d: %v", len(seqs), len(local), seqs)
	}
	// Without --since, the recent ones (not nothing).
	if out := hub.must("events", "--fleet"); strings.Count(out, `"host":"b"`) < len(local) {
		t.Fatalf("events --fleet without --since:\n%s", out)
	}
	for i, s := range seqs {
		if s != local[i].Seq {
			t.Fatalf("event %d: seq %d in the stream, %d in b's log (a duplicate or a gap): %v", i, s, local[i].Seq, seqs)
		}
	}
}

// A member killed mid-job: unreachable within 5 s, and its job ends in
// error saying so.
func TestFleetMemberKilledMidJob(t *testing.T) {
	proctest.Slow(t, "waits out a killed host's silence, about 6 s")
	t.Parallel()
	hub, b := fleetPair(t)
	cmd := exec.Command(corralBin, "exec", "--fleet", "--host", "b", "--agent", "auto", "--", "sleep", "6")
	cmd.Env = hub.vars
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	waitFor(t, 10*time.Second, "the job running on b", func() bool { return hub.inFleet(onHost("b")) })
	pid := b.daemonPID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waitFor(t, 5*time.Second, "b unreachable", func() bool { h, ok := hub.fleetHosts()["b"]; return ok && !h.Reachable })
	t.Logf("b unreachable %v after SIGKILL", time.Since(killed).Round(time.Millisecond))
	select {
	case err := <-done:
		if err == nil || !strings.Contains(stderr.String(), "stopped answering mid-job") {
			t.Fatalf("exec: %v\n%s", err, stderr.String())
		}
		t.Logf("the job failed %v after its host was killed", time.Since(killed).Round(time.Millisecond))
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the job hangs after its host died:\n%s", stderr.String())
	}
}

// The web board of a daemon in a fleet shows every host's panes, each
// with its host, and answers another host's prompt through the fleet.
func TestFleetWebBoard(t *testing.T) {
	proctest.Slow(t, "two daemons in a fleet and the web board, about 5 s")
	t.Parallel()
	hub, b := fleetPair(t)
	b.must("run", "--name", "fp", "--agent", "claude-code", "--", corralBin, "fake-agent")
	b.must("wait", "fp", "--state", "idle", "--timeout", "10s")
	b.must("send", "fp", "ask", "--enter")
	b.must("wait", "fp", "--state", "blocked", "--timeout", "10s")
	id := b.pane("fp").ID
	addr := strings.TrimSpace(strings.SplitN(hub.must("board", "--no-browser"), "\n", 2)[0])
	c, base := signIn(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws, _, err := boardWS(ctx, c, base)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	type card struct {
		ID, Host, State string
		Screen          [][]struct {
			T string `json:"t"`
		}
	}
	var seen card
	for seen.State != "blocked" || len(seen.Screen) == 0 {
		_, msg, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("no blocked card of b with its screen: %v (last %+v)", err, seen)
		}
		var st struct{ Panes []card }
		if err := json.Unmarshal(msg, &st); err != nil {
			t.Fatal(err)
		}
		for _, p := range st.Panes {
			if p.ID == "b:"+id {
				seen = p
			}
		}
	}
	if seen.Host != "b" {
		t.Fatalf("card %+v", seen)
	}
	req, _ := http.NewRequest("POST", base+"api/panes/"+url.PathEscape("b:"+id)+"/answer", strings.NewReader(`{"choice":"yes"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Corral", "1")
	req.Header.Set("Origin", strings.TrimSuffix(base[:strings.Index(base[7:], "/")+7], "/"))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("answer through the board: %d", resp.StatusCode)
	}
	b.must("wait", "fp", "--state", "done", "--timeout", "10s")

	// A pane that never blocks: its preview follows it, with its age.
	b.must("run", "--name", "plain", "--", "sh", "-c", "echo first-line; read x; echo second-$x; sleep 60")
	plain := b.pane("plain").ID
	b.must("send", "plain", "go", "--enter")
	sent := time.Now()
	var last card
	var lastAt string
	for {
		_, msg, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("b:plain's preview never showed its second line: %v (last %+v)", err, last)
		}
		var st struct {
			Panes []struct {
				card
				ScreenAt string `json:"screen_at"`
			}
		}
		if err := json.Unmarshal(msg, &st); err != nil {
			t.Fatal(err)
		}
		for _, p := range st.Panes {
			if p.ID == "b:"+plain {
				last, lastAt = p.card, p.ScreenAt
			}
		}
		text := ""
		for _, row := range last.Screen {
			for _, r := range row {
				text += r.T
			}
		}
		if strings.Contains(text, "second-go") {
			if at, err := time.Parse(time.RFC3339Nano, lastAt); err != nil || time.Since(at) > 10*time.Second {
				t.Fatalf("b:plain's screen_at %q: %v", lastAt, err)
			}
			t.Logf("b:plain's second line on the hub's board %v after it was typed", time.Since(sent).Round(time.Millisecond))
			break
		}
	}
}

// With --notify-fleet, a block on another host runs this host's
// notification command, naming the host.
func TestFleetNotifications(t *testing.T) {
	t.Parallel()
	hub := newEnv(t)
	notified := filepath.Join(hub.dir, "notified")
	os.MkdirAll(filepath.Join(hub.dir, "config", "corral"), 0o700)
	cfg := fmt.Sprintf("[notify]\ndesktop = false\ncommand = [\"sh\", \"-c\", \"printf '%%s\\\\n' \\\"$1\\\" >> %s\", \"notify\"]\n", notified)
	os.WriteFile(filepath.Join(hub.dir, "config", "corral", "config.toml"), []byte(cfg), 0o600)
	out := hub.must("fleet", "init", "--listen", "127.0.0.1:0", "--name", "hub", "--notify-fleet")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	join := strings.Fields(lines[len(lines)-1])
	b := newEnv(t)
	b.must(append(append([]string{"fleet"}, join[2:]...), "--name", "b")...)
	b.must("run", "--name", "fp", "--agent", "claude-code", "--", corralBin, "fake-agent")
	b.must("wait", "fp", "--state", "idle", "--timeout", "10s")
	b.must("send", "fp", "ask", "--enter")
	b.must("wait", "fp", "--state", "blocked", "--timeout", "10s")
	waitFor(t, 10*time.Second, "the hub's notification naming b:fp", func() bool {
		data, _ := os.ReadFile(notified)
		return strings.Contains(string(data), "b:fp")
	})
}

// A fleet job's permission request is answered from another host, and
// the caller sees what a local run shows.
func TestFleetJobPermissionRelay(t *testing.T) {
	t.Parallel()
	hub, b := fleetPair(t)
	script := `read prompt; echo '` + initJSON + `'; echo '` + askJSON + `'; read reply; ` +
		`case "$reply" in *'"behavior":"allow"'*) echo '{"type":"assistant","message":{"content":[{"type":"text","text":"allowed"}]}}';; ` +
		`*) echo '{"type":"assistant","message":{"content":[{"type":"text","text":"denied"}]}}';; esac; echo '` + resultJSON + `'; cat >/dev/null`
	cmd := exec.Command(corralBin, "exec", "--fleet", "--name", "relay", "--agent", "claude", "--prompt", "clean up", "--", "sh", "-c", script)
	cmd.Env, cmd.Dir = hub.vars, hub.dir
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	waitFor(t, 10*time.Second, "the job on b", func() bool { return hub.inFleet(named("relay")) })
	hub.must("wait", "b:relay", "--state", "blocked", "--timeout", "10s")
	if _, errs, code := hub.run("send", "b:relay", "hello"); code != 3 {
		t.Fatalf("send to a blocked job on another host: exit %d %q", code, errs)
	}
	hub.must("answer", "b:relay", "yes")
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "assistant: allowed") || !strings.Contains(out.String(), "allowed Bash: rm -rf build (corral answer yes)") {
			t.Fatalf("exec --fleet: %v\n%s", err, out.String())
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("exec --fleet did not end:\n%s", out.String())
	}
	if p := b.pane("relay"); p.State != "done" {
		t.Fatalf("the job on b after the answer: %+v", p)
	}
}
