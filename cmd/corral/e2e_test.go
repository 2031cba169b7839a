package main

// End-to-end tests: the real corral binary, a real daemon on a private
// socket, real PTYs running the built-in fake agent.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/proctest"
)

var corralBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "corral-e2e-")
	if err != nil {
		panic(err)
	}
	corralBin = filepath.Join(dir, "corral")
	args := []string{"build", "-o", corralBin}
	if os.Getenv("CORRAL_E2E_RACE") == "1" {
		args = append(args, "-race") // the daemon under the race detector
	}
	if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build corral: %v\n%s", err, out)
		os.Exit(1)
	}
	// The end-to-end tests mostly wait on daemons, terminals and timers, not
	// on a core: 6 a core, where 4 left a 2-core machine 45 % idle and the
	// package's -short run took 29-31 s (23-26 s at 6). A -short run, which
	// leaves out the longest (proctest.Slow), 10 a core: 18.8 s at 6, 14.5 s
	// at 10, 15.8 s at 15.
	flag.Parse()
	perCore := 6
	if testing.Short() {
		perCore = 10
	}
	proctest.MoreParallel(perCore)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is one private corral installation: socket, state and config.
type env struct {
	t    testing.TB
	dir  string
	vars []string

	apiOnce sync.Once
	api     *client.Client
}

// envPrefix begins the name of each env's folder, in os.TempDir().
const envPrefix = "ce"

func newEnv(t testing.TB) *env {
	t.Helper()
	dir, err := os.MkdirTemp("", envPrefix)
	if err != nil {
		t.Fatal(err)
	}
	envDirs.Store(dir, true)
	e := &env{t: t, dir: dir, vars: []string{
		"CORRAL_SOCKET=" + filepath.Join(dir, "s.sock"), "CORRAL_STATE_DIR=" + filepath.Join(dir, "state"),
		"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "HOME=" + dir, "PATH=" + os.Getenv("PATH"),
		"GORACE=" + os.Getenv("GORACE"),
	}}
	t.Cleanup(func() {
		// corral shutdown, unless no daemon answers: a process fewer for
		// the many tests whose daemon is gone by now.
		err := client.New(filepath.Join(dir, "s.sock")).Ping(context.Background())
		if !errors.Is(err, client.ErrNoDaemon) {
			e.run("shutdown")
		}
		os.RemoveAll(dir)
	})
	return e
}

func (e *env) run(args ...string) (stdout, stderr string, code int) {
	cmd := exec.Command(corralBin, args...)
	cmd.Env = e.vars
	cmd.Dir = e.dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("corral %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// must runs a command that must succeed and returns its stdout.
func (e *env) must(args ...string) string {
	e.t.Helper()
	out, errs, code := e.run(args...)
	if code != 0 {
		e.t.Fatalf("corral %v: exit %d: %s", args, code, errs)
	}
	return out
}

type paneJSON struct {
	ID, Name, Agent, State, Kind, Message, Source, Since string
	PID                                                  int
	ExitCode                                             *int `json:"exit_code"`
}

// look reads path (GET) from e's daemon through its socket into out, and
// reports whether a daemon answered; any other failure fails the test. The
// tests' looks at the panes, the screens and the fleet, polled until a
// condition holds, go through it rather than a corral command each: a
// command costs about 12 ms of CPU to start, a run of the tests started
// 1,300 of them, and starts none when no daemon runs.
func (e *env) look(path string, out any) bool {
	e.t.Helper()
	raw, ok := e.lookRaw(path)
	if ok && out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			e.t.Fatalf("GET %s from the daemon: %v", path, err)
		}
	}
	return ok
}

// lookRaw is look's answer as the daemon sent it.
func (e *env) lookRaw(path string) ([]byte, bool) {
	e.t.Helper()
	e.apiOnce.Do(func() { e.api = client.New(filepath.Join(e.dir, "s.sock")) })
	ctx, cancel := context.WithTimeout(context.Background(), client.Timeout)
	defer cancel()
	raw, err := e.api.Raw(ctx, "GET", path)
	if errors.Is(err, client.ErrNoDaemon) {
		return nil, false
	}
	if err != nil {
		e.t.Fatalf("GET %s from the daemon: %v", path, err)
	}
	return raw, true
}

// eventLines are corral events --since SINCE's lines (NDJSON), from the
// daemon when one runs.
func (e *env) eventLines(since time.Duration) string {
	e.t.Helper()
	q := url.Values{"since": {time.Now().Add(-since).UTC().Format(time.RFC3339Nano)}}
	if raw, ok := e.lookRaw("/v1/events?" + q.Encode()); ok {
		return string(raw)
	}
	return e.must("events", "--since", since.String())
}

// lookOrRun reads path from the daemon as look does, or when none answers
// runs corral with args (which starts one) and decodes its JSON.
func (e *env) lookOrRun(path string, out any, args ...string) {
	e.t.Helper()
	if e.look(path, out) {
		return
	}
	if err := json.Unmarshal([]byte(e.must(args...)), out); err != nil {
		e.t.Fatalf("corral %v: %v", args, err)
	}
}

// screen is what corral screen ref prints (without --ansi).
func (e *env) screen(ref string) string {
	e.t.Helper()
	var s struct{ Lines []string }
	if !e.look("/v1/panes/"+url.PathEscape(ref)+"/screen", &s) {
		return e.must("screen", ref)
	}
	return strings.Join(s.Lines, "\n") + "\n"
}

func (e *env) pane(ref string) paneJSON {
	e.t.Helper()
	ps := e.panes()
	for _, p := range ps {
		if p.ID == ref || p.Name == ref {
			return p
		}
	}
	e.t.Fatalf("no pane %s in %+v", ref, ps)
	return paneJSON{}
}

func TestAgentLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := strings.TrimSpace(e.must("run", "--name", "fp", "--agent", "claude-code", "--", corralBin, "fake-agent", "--command", "ls -la /tmp"))
	if len(id) != 5 {
		t.Fatalf("id %q", id)
	}
	e.must("wait", "fp", "--state", "idle", "--timeout", "10s")
	e.must("send", "fp", "ask", "--enter")
	e.must("wait", id, "--state", "blocked", "--timeout", "10s")
	p := e.pane("fp")
	if p.Kind != "permission" || p.Source != "screen" || p.Message != "Do you want to proceed?" {
		t.Fatalf("blocked pane: %+v", p)
	}
	// A script never types into a prompt by accident.
	_, errs, code := e.run("send", "fp", "rm -rf /", "--enter")
	if code != 3 || !strings.Contains(errs, "blocked") {
		t.Fatalf("send while blocked: exit %d %q", code, errs)
	}
	e.must("answer", "fp", "yes")
	e.must("wait", "fp", "--state", "done", "--timeout", "10s")
	if _, errs, code := e.run("answer", "fp", "yes"); code != 3 || !strings.Contains(errs, "not blocked") {
		t.Fatalf("answer while not blocked: exit %d %q", code, errs)
	}
	// Reading the screen marks the turn seen.
	if screen := e.must("screen", "fp"); !strings.Contains(screen, "Done. I did what you asked.") {
		t.Fatalf("screen:\n%s", screen)
	}
	if p := e.pane("fp"); p.State != "idle" {
		t.Fatalf("after screen: %s", p.State)
	}
	events := e.must("events", "--since", "1h")
	var states []string
	for _, line := range strings.Split(strings.TrimSpace(events), "\n") {
		var ev struct{ Pane, State, Previous, Source, Time string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		if ev.Pane != id || ev.Time == "" || ev.Previous == "" {
			t.Fatalf("event %q", line)
		}
		states = append(states, ev.State)
	}
	// starting → idle first
	if got := strings.Join(states, ","); got != "idle,working,blocked,working,done,idle" {
		t.Fatalf("events %s", got)
	}
	if _, errs, code := e.run("wait", "fp", "--state", "blocked", "--timeout", "300ms"); code != 124 {
		t.Fatalf("wait timeout: exit %d %q", code, errs)
	}
	if _, errs, code := e.run("screen", "nope"); code != 1 || !strings.Contains(errs, "no pane named nope; see corral ls") {
		t.Fatalf("unknown pane: exit %d %q", code, errs)
	}
}

// The event log outlives the daemon: a new daemon serves the old events.
func TestDaemonRestartKeepsEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("run", "--name", "a", "--agent", "claude-code", "--", corralBin, "fake-agent")
	e.must("send", "a", "work 0.3", "--enter")
	e.must("wait", "a", "--state", "done", "--timeout", "10s")
	before := e.must("events", "--since", "1h")
	e.must("shutdown")
	if _, err := os.Stat(filepath.Join(e.dir, "s.sock")); !os.IsNotExist(err) {
		t.Fatalf("socket left after shutdown: %v", err)
	}
	after := e.must("events", "--since", "1h") // starts a new daemon
	// The shutdown ended the pane: one more event, exited by SIGHUP.
	if !strings.HasPrefix(after, before) || !strings.Contains(before, `"state":"done"`) ||
		!strings.Contains(strings.TrimPrefix(after, before), `"state":"exited"`) {
		t.Fatalf("events before restart:\n%s\nafter:\n%s", before, after)
	}
	if ls := e.must("ls", "--json"); strings.TrimSpace(ls) != "[]" {
		t.Fatalf("panes after restart: %s", ls)
	}
}

// kill and shutdown end every process of every pane: none left in /proc.
func TestKillAndShutdownLeaveNoOrphans(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("run", "--name", "k", "--", "sh", "-c", "sleep 300 & sleep 301 & echo ready; sleep 302")
	e.must("run", "--name", "s", "--", "sh", "-c", "sleep 303 & echo ready; sleep 304")
	var pgids []int
	for _, name := range []string{"k", "s"} {
		if !proctest.WaitFor(10*time.Second, func() bool { return strings.Contains(e.screen(name), "ready") }) {
			t.Fatalf("%s never ready", name)
		}
		pgids = append(pgids, e.pane(name).PID)
	}
	e.must("kill", "k")
	if p := e.pane("k"); p.State != "exited" || p.ExitCode == nil || *p.ExitCode != 128+int(syscall.SIGTERM) {
		t.Fatalf("killed pane: %+v", p)
	}
	if n := proctest.GroupMembers(pgids[0]); n != 0 {
		t.Fatalf("%d processes left in killed pane's group", n)
	}
	daemon := daemonPID(t, e)
	e.must("shutdown")
	if n := proctest.GroupMembers(pgids[1]); n != 0 {
		t.Fatalf("%d processes left after shutdown", n)
	}
	// shutdown returns once the socket is gone; the process ends just after.
	if !proctest.WaitFor(5*time.Second, func() bool { return !proctest.Alive(daemon) }) {
		t.Fatal("daemon still running after shutdown")
	}
}

// SIGTERM to the daemon ends every pane too.
func TestDaemonSIGTERM(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("run", "--name", "x", "--", "sh", "-c", "sleep 305 & sleep 306")
	pgid := e.pane("x").PID
	daemon := daemonPID(t, e)
	syscall.Kill(daemon, syscall.SIGTERM)
	proctest.WaitFor(10*time.Second, func() bool { return !proctest.Alive(daemon) })
	if proctest.Alive(daemon) || proctest.GroupMembers(pgid) != 0 {
		t.Fatalf("daemon alive %v, %d pane processes left", proctest.Alive(daemon), proctest.GroupMembers(pgid))
	}
}

// A crashed daemon leaves its socket; the next command replaces it.
func TestStaleSocketReplaced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("ls")
	daemon := daemonPID(t, e)
	syscall.Kill(daemon, syscall.SIGKILL)
	waitFor(t, 5*time.Second, "the daemon to die", func() bool { return !proctest.Alive(daemon) })
	if _, err := os.Stat(filepath.Join(e.dir, "s.sock")); err != nil {
		t.Fatalf("expected a stale socket: %v", err)
	}
	e.must("ls")
	if next := daemonPID(t, e); next == daemon {
		t.Fatal("no new daemon")
	}
}

// A pane printing random bytes as fast as it can leaves the daemon and other
// panes responsive.
func TestFloodLeavesOthersResponsive(t *testing.T) {
	proctest.Slow(t, "a flood until a prompt's round trip is done, about 5 s")
	t.Parallel() // its bounds are 20 s a step: other tests' load does not matter
	if os.Getenv("CORRAL_E2E_RACE") == "1" {
		t.Skip("100 MB through a race-built daemon takes too long; the plain run covers it")
	}
	e := newEnv(t)
	// Random bytes leave the terminal in any mode (alternate screen, line
	// drawing charset, scroll region): a reset (RIS) before the last word.
	// The flood lasts until the round trip is done, not for a size: the
	// round trip cannot come after it, however fast the machine.
	stop := filepath.Join(e.dir, "flood-stop")
	e.must("run", "--name", "flood", "--", "sh", "-c", `while [ ! -e `+stop+` ]; do head -c 4000000 /dev/urandom; done; printf '\033c'; echo flood-done`)
	e.must("run", "--name", "fp", "--agent", "claude-code", "--", corralBin, "fake-agent")
	e.must("wait", "fp", "--state", "idle", "--timeout", "20s")
	start := time.Now()
	e.must("send", "fp", "ask", "--enter")
	e.must("wait", "fp", "--state", "blocked", "--timeout", "20s")
	e.must("answer", "fp", "yes")
	e.must("wait", "fp", "--state", "done", "--timeout", "20s")
	t.Logf("a prompt round trip during the flood took %v", time.Since(start))
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.must("wait", "flood", "--state", "exited", "--timeout", "5m")
	if screen := e.must("screen", "flood"); !strings.Contains(screen, "flood-done") {
		t.Fatalf("the flood's last words are not on its kept screen:\n%s", screen)
	}
}

func daemonPID(t *testing.T, e *env) int {
	t.Helper()
	sock := []byte("CORRAL_SOCKET=" + filepath.Join(e.dir, "s.sock") + "\x00")
	found := procsWhere(func(pid int, cmdline []byte) bool {
		if !bytes.HasPrefix(cmdline, []byte(corralBin+"\x00serve")) {
			return false
		}
		environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		return bytes.HasPrefix(environ, sock) || bytes.Contains(environ, append([]byte{0}, sock...))
	})
	if len(found) != 1 {
		t.Fatalf("daemons found: %v", found)
	}
	return found[0]
}

// A hook report from inside a pane drives its state; one with a wrong
// token is refused and counted, and never breaks the caller.
func TestHooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	payload := `{"hook_event_name":"PermissionRequest","session_id":"s1","tool_name":"Bash","tool_input":{"command":"ls -la /tmp"}}`
	// Reports that must decide nothing: a payload of the wrong shape, an
	// unknown event, Codex's hidden title thread, another conversation.
	ignored := []string{`[1,2]`, `{"hook_event_name":"Mystery"}`,
		`{"type":"agent-turn-complete","input-messages":["Generate a concise, single-line task title for: x"]}`,
		`{"hook_event_name":"Stop","session_id":"nested"}`}
	script := fmt.Sprintf(`echo '%s' | %s hook --agent claude-code && echo hooked; `, payload, corralBin)
	for _, p := range ignored {
		script += fmt.Sprintf(`echo '%s' | %s hook; `, p, corralBin)
	}
	script += fmt.Sprintf(`echo '{"hook_event_name":"Stop"}' | CORRAL_TOKEN=forged %s hook && echo forged-ok; sleep 60`, corralBin)
	e.must("run", "--name", "h", "--", "sh", "-c", script)
	e.must("wait", "h", "--state", "blocked", "--timeout", "10s")
	proctest.WaitFor(10*time.Second, func() bool { return strings.Contains(e.screen("h"), "forged-ok") })
	var ps []struct {
		State, Kind, Message, Source string
		HooksRefused                 int64 `json:"hooks_refused"`
		HooksIgnored                 int   `json:"hooks_ignored"`
	}
	ok := func() bool {
		ps = nil
		e.lookOrRun("/v1/panes", &ps, "ls", "--json")
		return len(ps) == 1 && ps[0].State == "blocked" && ps[0].Source == "hook" && ps[0].Message == "approve Bash: ls -la /tmp" &&
			ps[0].HooksRefused == 1 && ps[0].HooksIgnored == len(ignored)
	}
	if !proctest.WaitFor(5*time.Second, ok) {
		t.Fatalf("after hooks: %+v\n%s", ps, e.must("screen", "h"))
	}
}

// lockedBuffer is a bytes.Buffer safe to read while a process writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The WebSocket event stream carries each state change as a JSON message.
func TestEventsWebSocket(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("ls") // start the daemon
	c := client.New(filepath.Join(e.dir, "s.sock"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://corral/v1/events/ws", &websocket.DialOptions{HTTPClient: c.HTTPClient()})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	e.must("run", "--name", "w", "--agent", "claude-code", "--", corralBin, "fake-agent")
	e.must("send", "w", "ask", "--enter")
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("no blocked event on the WebSocket: %v", err)
		}
		var ev struct{ Name, State, Kind string }
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatalf("message %q: %v", data, err)
		}
		if ev.Name == "w" && ev.State == "blocked" && ev.Kind == "permission" {
			return
		}
	}
}

// tableText is the pane table's files as the next daemon reads them:
// panes.json, then the journal of changes over it.
func tableText(state string) string {
	a, _ := os.ReadFile(filepath.Join(state, "panes.json"))
	b, _ := os.ReadFile(filepath.Join(state, "panes.journal"))
	return string(a) + string(b)
}

// foldTable reads the pane table as the next daemon would (panes.json,
// the journal over it), writes that back as panes.json alone and returns
// it, for a test to edit the table a crashed daemon left.
func foldTable(t *testing.T, state string) map[string]any {
	t.Helper()
	var table map[string]any
	b, err := os.ReadFile(filepath.Join(state, "panes.json"))
	if err != nil || json.Unmarshal(b, &table) != nil {
		t.Fatalf("pane table: %v\n%s", err, b)
	}
	rows := map[string]map[string]any{}
	lost := map[string]bool{}
	var order []string
	put := func(r map[string]any, isLost bool) {
		id, _ := r["id"].(string)
		if _, ok := rows[id]; !ok {
			order = append(order, id)
		}
		rows[id], lost[id] = r, isLost
	}
	for _, k := range []string{"panes", "lost"} {
		list, _ := table[k].([]any)
		for _, r := range list {
			put(r.(map[string]any), k == "lost")
		}
	}
	j, _ := os.ReadFile(filepath.Join(state, "panes.journal"))
	for _, line := range strings.Split(string(j), "\n") {
		var jl struct {
			Op, ID string
			Lost   bool
			Row    map[string]any
		}
		if json.Unmarshal([]byte(line), &jl) != nil {
			continue
		}
		switch jl.Op {
		case "put":
			put(jl.Row, jl.Lost)
		case "del":
			delete(rows, jl.ID)
		}
	}
	panes, lostRows := []any{}, []any{}
	for _, id := range order {
		if r, ok := rows[id]; ok {
			if lost[id] {
				lostRows = append(lostRows, r)
			} else {
				panes = append(panes, r)
			}
		}
	}
	table["panes"], table["lost"] = panes, lostRows
	b, _ = json.Marshal(table)
	os.WriteFile(filepath.Join(state, "panes.json"), b, 0o600)
	os.Remove(filepath.Join(state, "panes.journal"))
	return table
}
