package main

// Panes that outlive the daemon: a crash (kill -9), a hand-over to a new
// build, a reboot (corral restore), and what the next daemon refuses.

import (
	"encoding/json"
	"fmt"
	"net"
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

	"github.com/corral-dev/corral/internal/holder"
	"github.com/corral-dev/corral/internal/proctest"
)

// holders returns the pids of the environment's pane holders.
func (e *env) holders() []int {
	sock := "CORRAL_SOCKET=" + filepath.Join(e.dir, "s.sock") + "\x00"
	return procsWhere(func(pid int, cmdline []byte) bool {
		args := strings.Split(string(cmdline), "\x00")
		if len(args) < 2 || args[1] != "hold" || !proctest.Alive(pid) {
			return false
		}
		env, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		return strings.Contains(string(env), sock)
	})
}

// reboot kills at once, as a reboot would, the daemon, every holder of e
// and every program whose command line holds one of words, and waits until
// none of those programs is left.
func (e *env) reboot(t *testing.T, words ...string) {
	t.Helper()
	syscall.Kill(daemonPID(t, e), syscall.SIGKILL)
	for _, h := range e.holders() {
		syscall.Kill(h, syscall.SIGKILL)
	}
	for _, w := range words {
		for _, pid := range withArg(w) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	noneLeft(t, "the reboot", words...)
}

type eventJSON struct {
	Seq   uint64
	Pane  string
	Name  string
	State string
}

func (e *env) events() []eventJSON {
	e.t.Helper()
	var out []eventJSON
	for _, line := range strings.Split(strings.TrimSpace(e.eventLines(24*time.Hour)), "\n") {
		if line == "" {
			continue
		}
		var ev eventJSON
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			e.t.Fatalf("event %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

// checkEvents fails unless before is a prefix of after and the sequence
// numbers count up by one: nothing lost, nothing twice.
func checkEvents(t *testing.T, before, after []eventJSON) {
	t.Helper()
	if len(after) < len(before) {
		t.Fatalf("%d events before, %d after", len(before), len(after))
	}
	for i := range before {
		if before[i] != after[i] {
			t.Fatalf("event %d changed: %+v then %+v", i, before[i], after[i])
		}
	}
	for i := 1; i < len(after); i++ {
		if after[i].Seq != after[i-1].Seq+1 {
			t.Fatalf("sequence numbers %d then %d", after[i-1].Seq, after[i].Seq)
		}
	}
}

// crowd starts n panes, half of them the fake agent (idle, then one asks),
// half shells that printed 2,000 lines (more than a checkpoint of the
// ring waits for: the next daemon replays from one), and waits until each
// is settled.
func crowd(t *testing.T, e *env, n int) (names []string, screens map[string]string, pids map[string]int) {
	t.Helper()
	if os.Getenv("CORRAL_E2E_RACE") == "1" {
		// Every holder is a race-built process too: 20 of them take minutes
		// to start on two cores. The plain pass runs the full crowd.
		n = min(n, 6)
	}
	e.must("ls") // the daemon, before the runs at once
	// Started at once, and each waited for at once: what is measured
	// after is the crash, not the crowd.
	failed := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		name := fmt.Sprintf("p%02d", i)
		names = append(names, name)
		wg.Go(func() {
			var args []string
			if i%2 == 0 {
				args = []string{"run", "--name", name, "--agent", "claude-code", "--size", "90x24", "--", corralBin, "fake-agent"}
			} else {
				args = []string{"run", "--name", name, "--size", "70x20", "--", "sh", "-c",
					fmt.Sprintf(`for i in $(seq 1 2000); do printf '\033[3%%dm%s line %%d\033[0m\n' $((i%%8)) $i; done; echo ready-%s; while read l; do echo "got $l"; done`, name, name)}
			}
			if _, errs, code := e.run(args...); code != 0 {
				failed[i] = fmt.Sprintf("corral run %s: exit %d: %s", name, code, errs)
				return
			}
			if i%2 == 0 {
				if _, errs, code := e.run("wait", name, "--state", "idle", "--timeout", "20s"); code != 0 {
					failed[i] = fmt.Sprintf("corral wait %s: exit %d: %s", name, code, errs)
				}
				return
			}
			if !proctest.WaitFor(20*time.Second, func() bool { return strings.Contains(e.screen(name), "ready-"+name) }) {
				failed[i] = name + " never showed ready-" + name
			}
		})
	}
	wg.Wait()
	if f := strings.Join(slices.DeleteFunc(failed, func(s string) bool { return s == "" }), "\n"); f != "" {
		t.Fatal(f)
	}
	screens, pids = map[string]string{}, map[string]int{}
	// One agent mid-prompt: blocked across the crash.
	e.must("send", names[0], "ask", "--enter")
	e.must("wait", names[0], "--state", "blocked", "--timeout", "20s")
	for _, name := range names {
		screens[name] = e.screen(name)
		pids[name] = e.pane(name).PID
	}
	return names, screens, pids
}

// after checks that every pane came back as it was and is live.
func (e *env) afterCrowd(names []string, screens map[string]string, pids map[string]int) {
	t := e.t
	t.Helper()
	for _, name := range names {
		p := e.pane(name)
		if p.PID != pids[name] {
			t.Fatalf("%s: pid %d, was %d", name, p.PID, pids[name])
		}
		if got := e.screen(name); got != screens[name] {
			t.Fatalf("%s: screen before:\n%s\nafter:\n%s", name, screens[name], got)
		}
	}
	if p := e.pane(names[0]); p.State != "blocked" {
		t.Fatalf("%s: %+v, was blocked", names[0], p)
	}
	// Live: an answer goes through, a shell echoes.
	e.must("answer", names[0], "yes")
	e.must("wait", names[0], "--state", "done", "--timeout", "20s")
	e.must("send", names[1], "hello", "--enter")
	waitFor(t, 10*time.Second, "the shell's echo", func() bool { return strings.Contains(e.screen(names[1]), "got hello") })
}

// shutdownLeavesNothing ends the daemon and checks /proc for every
// program and holder.
func (e *env) shutdownLeavesNothing(pids map[string]int) {
	t := e.t
	t.Helper()
	e.must("shutdown")
	waitFor(t, 5*time.Second, "every pane's program and holder to end", func() bool {
		for _, pid := range pids {
			if proctest.Alive(pid) {
				return false
			}
		}
		return len(e.holders()) == 0
	})
}

// kill -9 of the daemon with 20 panes: every program lives on, and the
// next command's daemon re-adopts them all, screens and states as they
// were, with no event lost or logged twice.
func daemonCrashLosesNothing(t *testing.T) {
	e := newEnv(t)
	names, screens, pids := crowd(t, e, 20)
	// The panes share holder processes, GroupSize to a process.
	if h, want := e.holders(), (len(names)+holder.GroupSize-1)/holder.GroupSize; len(h) != want {
		t.Fatalf("%d holders for %d panes, want %d", len(h), len(names), want)
	}
	before := e.events()
	daemon := daemonPID(t, e)
	syscall.Kill(daemon, syscall.SIGKILL)
	waitFor(t, 5*time.Second, "the daemon to die", func() bool { return !proctest.Alive(daemon) })
	for name, pid := range pids {
		if !proctest.Alive(pid) {
			t.Fatalf("%s's program (pid %d) died with the daemon", name, pid)
		}
	}
	start := time.Now()
	ps := e.panes() // starts the next daemon, which re-adopts
	took := time.Since(start)
	if len(ps) != len(names) {
		t.Fatalf("%d panes after the crash: %+v", len(ps), ps)
	}
	bound := 2 * time.Second
	if os.Getenv("CORRAL_E2E_RACE") == "1" {
		bound = 6 * time.Second // a race-built daemon starts and replays several times slower
	}
	if took > bound {
		t.Fatalf("re-adopting %d panes took %v", len(names), took)
	}
	t.Logf("the next command re-adopted %d panes in %v", len(names), took)
	if daemonPID(t, e) == daemon {
		t.Fatal("the same daemon")
	}
	checkEvents(t, before, e.events())
	e.afterCrowd(names, screens, pids)
	checkEvents(t, before, e.events())
	e.shutdownLeavesNothing(pids)
}

// An upgrade: serve --replace from another build takes the panes over,
// then corral restart hands them back; nothing ends.
func TestReplaceHandsOver(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	names, screens, pids := crowd(t, e, 20)
	before := e.events()
	old := daemonPID(t, e)
	other := anotherBuild(t, e)
	cmd := exec.Command(other, "serve", "--replace")
	cmd.Env, cmd.Dir = e.vars, e.dir
	logf, _ := os.Create(filepath.Join(e.dir, "replace.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, 10*time.Second, "the new daemon", func() bool {
		out, _, code := e.run("version", "--json")
		return code == 0 && strings.Contains(out, `"same": false`) || strings.Contains(out, `"same":false`)
	})
	t.Logf("serve --replace: the new daemon answered after %v", time.Since(start))
	if proctest.Alive(old) {
		t.Fatal("the old daemon still runs")
	}
	if ps := e.panes(); len(ps) != len(names) {
		t.Fatalf("%d panes after the hand-over", len(ps))
	}
	checkEvents(t, before, e.events())
	for _, name := range names {
		if got := e.screen(name); got != screens[name] {
			t.Fatalf("%s: screen before:\n%s\nafter:\n%s", name, screens[name], got)
		}
	}
	// And back, in the background, to this build.
	start = time.Now()
	e.must("restart")
	t.Logf("corral restart took %v", time.Since(start))
	if err := cmd.Wait(); err != nil {
		b, _ := os.ReadFile(filepath.Join(e.dir, "replace.log"))
		t.Fatalf("serve --replace: %v\n%s", err, b)
	}
	if out := e.must("version"); !strings.Contains(out, "daemon: the same build") {
		t.Fatalf("after restart:\n%s", out)
	}
	e.afterCrowd(names, screens, pids)
	checkEvents(t, before, e.events())
	e.shutdownLeavesNothing(pids)
}

// After a reboot (every holder and program killed), corral restore starts
// the panes again in their folders, with their names and sizes, resuming
// the agents' conversations corral saw; a shell starts fresh and says so.
func TestRestoreAfterReboot(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bin := filepath.Join(e.dir, "bin")
	os.MkdirAll(bin, 0o755)
	argsLog := filepath.Join(e.dir, "args.log")
	// Fake claude and codex: each logs its command line, reports its
	// conversation through corral's hook as the real one does, and waits.
	fake := func(name, payload, agent string) {
		script := fmt.Sprintf("#!/bin/sh\necho \"%s $*\" >> %s\necho '%s' | %s hook --agent %s\necho %s-started\nexec sleep 1017\n",
			name, argsLog, payload, corralBin, agent, name)
		if err := proctest.WriteExecutable(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fake("claude", `{"hook_event_name":"SessionStart","session_id":"sess-42"}`, "claude-code")
	fake("codex", `{"type":"agent-turn-complete","thread-id":"thr-7","input-messages":["hi"]}`, "codex")
	e.vars = append(e.vars, "PATH="+bin+":"+os.Getenv("PATH"))
	work := filepath.Join(e.dir, "work")
	os.MkdirAll(work, 0o755)
	e.must("run", "--name", "cc", "--cwd", work, "--size", "100x30", "--", "claude", "--model", "m1")
	e.must("run", "--name", "cx", "--cwd", work, "--", "codex")
	e.must("run", "--name", "sh", "--size", "60x15", "--", "sh", "-c", "echo shell-started; exec sleep 1018")
	for _, n := range []string{"cc", "cx", "sh"} {
		waitFor(t, 10*time.Second, n+" started", func() bool { return strings.Contains(e.screen(n), "-started") })
	}
	ids := map[string]string{}
	for _, p := range e.panes() {
		ids[p.Name] = p.ID
	}
	// The table holds the conversations once the hooks have reported.
	waitFor(t, 15*time.Second, "the sessions in the pane table", func() bool {
		b := tableText(filepath.Join(e.dir, "state"))
		return strings.Contains(b, "sess-42") && strings.Contains(b, "thr-7")
	})
	// The reboot: the daemon, every holder and every program die at once.
	e.reboot(t, "1017", "1018")
	// Lost, and shown so: state lost, with what brings them back.
	lostList := e.panes()
	if len(lostList) != 3 {
		t.Fatalf("panes with their holders gone: %+v, want the 3 as lost", lostList)
	}
	for _, p := range lostList {
		if p.State != "lost" || !strings.Contains(p.Message, "corral restore brings it back") || p.ID != ids[p.Name] {
			t.Fatalf("a lost pane: %+v", p)
		}
	}
	if ls := e.must("ls"); !strings.Contains(ls, "lost") || !strings.Contains(ls, "corral restore") {
		t.Fatalf("ls does not show the lost panes:\n%s", ls)
	}
	if _, errs, code := e.run("restore", "nosuch"); code == 0 || !strings.Contains(errs, "no lost pane named nosuch") {
		t.Fatalf("restore nosuch: exit %d %q", code, errs)
	}
	out := e.must("restore", "--json")
	var res []struct {
		ID, Was, Name, Cwd, Resumed, Note, Error string
		Command                                  []string
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 3 {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	for _, r := range res {
		if r.Error != "" || r.ID != r.Was || r.ID != ids[r.Name] {
			t.Fatalf("restored %+v (ids %v)", r, ids)
		}
		switch r.Name {
		case "cc":
			if r.Resumed != "sess-42" || r.Cwd != work {
				t.Fatalf("claude: %+v", r)
			}
		case "cx":
			if r.Resumed != "thr-7" {
				t.Fatalf("codex: %+v", r)
			}
		case "sh":
			if r.Resumed != "" || !strings.Contains(r.Note, "fresh") {
				t.Fatalf("shell: %+v", r)
			}
		}
	}
	for _, n := range []string{"cc", "cx", "sh"} {
		waitFor(t, 10*time.Second, n+" restarted", func() bool { return strings.Contains(e.screen(n), "-started") })
	}
	var ps []struct {
		Name, Cwd  string
		Cols, Rows int
	}
	e.lookOrRun("/v1/panes", &ps, "ls", "--json")
	for _, p := range ps {
		if p.Name == "cc" && (p.Cwd != work || p.Cols != 100 || p.Rows != 30) || p.Name == "sh" && (p.Cols != 60 || p.Rows != 15) {
			t.Fatalf("restored pane %+v", p)
		}
	}
	b, _ := os.ReadFile(argsLog)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var claudeArgs, codexArgs []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "claude "):
			claudeArgs = append(claudeArgs, l)
		case strings.HasPrefix(l, "codex "):
			codexArgs = append(codexArgs, l)
		}
	}
	if len(claudeArgs) != 2 || strings.Contains(claudeArgs[0], "--resume") || !strings.Contains(claudeArgs[1], "--resume sess-42") ||
		!strings.HasSuffix(claudeArgs[1], "--model m1") {
		t.Fatalf("claude's command lines:\n%s", b)
	}
	if len(codexArgs) != 2 || !strings.HasSuffix(codexArgs[1], " resume thr-7") {
		t.Fatalf("codex's command lines:\n%s", b)
	}
	e.must("shutdown")
	noneLeft(t, "shutdown after restore", "1017", "1018")
	// A holder goes once the daemon has collected its last pane, which
	// the daemon does just before it stops.
	waitFor(t, 5*time.Second, "no holder left", func() bool { return len(e.holders()) == 0 })
}

// What the next daemon refuses: a socket in the table that is not the
// pane's holder, one that sends a frame over the limit, a holder that is
// gone, and a table that is not one; never adopted, never a panic.
func TestAdoptRefusesBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("run", "--name", "good", "--", "sh", "-c", "echo good-pane; exec sleep 1063")
	waitFor(t, 10*time.Second, "good", func() bool { return strings.Contains(e.screen("good"), "good-pane") })
	good := e.pane("good")
	state := filepath.Join(e.dir, "state")
	daemon := daemonPID(t, e)
	syscall.Kill(daemon, syscall.SIGKILL)
	waitFor(t, 5*time.Second, "the daemon to die", func() bool { return !proctest.Alive(daemon) })

	table := foldTable(t, state)
	row := table["panes"].([]any)[0].(map[string]any)
	clone := func(id, sock string) map[string]any {
		r := map[string]any{}
		for k, v := range row {
			r[k] = v
		}
		r["id"], r["name"], r["socket"], r["holder_pid"] = id, id, sock, 0
		return r
	}
	// A socket that answers with garbage, one with a frame of 2 GB, and
	// one whose holder is gone.
	serve := func(name string, reply []byte) string {
		sock := filepath.Join(state, "holders", name+".sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Write(reply)
				time.Sleep(100 * time.Millisecond) // the fake holder lingers before it hangs up
				c.Close()
			}
		}()
		return sock
	}
	garbage := serve("garb1", []byte("HTTP/1.1 200 OK\r\n\r\nhello"))
	huge := serve("huge1", []byte{'h', 0x7f, 0xff, 0xff, 0xff})
	table["panes"] = append(table["panes"].([]any), clone("garb1", garbage), clone("huge1", huge),
		clone("gone1", filepath.Join(state, "holders", "gone1.sock")), clone("away1", "/tmp/elsewhere.sock"))
	b, _ := json.Marshal(table)
	os.WriteFile(filepath.Join(state, "panes.json"), b, 0o600)

	// The one adopted; the others listed as lost, each with its reason.
	var ps []paneJSON
	lost := 0
	for _, p := range e.panes() {
		if p.State == "lost" {
			lost++
			continue
		}
		ps = append(ps, p)
	}
	if len(ps) != 1 || ps[0].ID != good.ID || ps[0].PID != good.PID || lost != 4 {
		t.Fatalf("adopted: %+v, %d lost", ps, lost)
	}
	log, _ := os.ReadFile(filepath.Join(state, "daemon.log"))
	for _, want := range []string{"pane garb1 (garb1) not adopted: its socket is not this pane's holder", "pane huge1 (huge1) not adopted: its socket is not this pane's holder, or refused us: bad holder frame",
		"pane gone1 (gone1) not adopted: its holder (pid 0) no longer holds it", "pane away1 (away1) not adopted: its holder socket /tmp/elsewhere.sock is not in this daemon's state folder"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the daemon's log does not say %q:\n%s", want, log)
		}
	}
	// The refused entries are kept as lost, for restore; --forget drops them.
	var forgot []struct{ Was, Note string }
	if err := json.Unmarshal([]byte(e.must("restore", "--forget", "--json")), &forgot); err != nil || len(forgot) != 4 {
		t.Fatalf("restore --forget: %v %+v", err, forgot)
	}
	if out, errs, _ := e.run("restore"); out != "" || !strings.Contains(errs, "no pane to restore") {
		t.Fatalf("restore after --forget: %q %q", out, errs)
	}
	// A table that is not one is set aside; the daemon starts without it.
	daemon = daemonPID(t, e)
	syscall.Kill(daemon, syscall.SIGKILL)
	waitFor(t, 5*time.Second, "the daemon to die", func() bool { return !proctest.Alive(daemon) })
	os.WriteFile(filepath.Join(state, "panes.json"), []byte("{not json"), 0o600)
	if ps := e.panes(); len(ps) != 0 {
		t.Fatalf("panes from a corrupt table: %+v", ps)
	}
	if _, err := os.Stat(filepath.Join(state, "panes.json.bad")); err != nil {
		t.Fatalf("the corrupt table was not set aside: %v", err)
	}
	// The good pane's holder was not adopted this time; it is ended by
	// hand, as a user would.
	for _, h := range e.holders() {
		syscall.Kill(h, syscall.SIGTERM)
	}
	noneLeft(t, "the holder's SIGTERM", "1063")
	waitFor(t, 5*time.Second, "the holder to end", func() bool { return len(e.holders()) == 0 })
}

// A re-adopted pane keeps its OSC 7501 records when the reports that made
// them are no longer in the holder's ring, and its hook token: a hook
// from inside it after the crash still drives its state.
func TestAdoptKeepsRecordsAndToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	payload := `{"hook_event_name":"PermissionRequest","session_id":"s1","tool_name":"Bash","tool_input":{"command":"make"}}`
	script := fmt.Sprintf(`%s status working --id build --msg compiling --app make; head -c 400000 /dev/zero | tr '\0' x; echo; echo done-rec; read x; echo '%s' | %s hook --agent claude-code; exec sleep 1023`,
		corralBin, payload, corralBin)
	e.must("run", "--name", "rec", "--", "sh", "-c", script)
	waitFor(t, 20*time.Second, "the output", func() bool { return strings.Contains(e.screen("rec"), "done-rec") })
	records := func() string {
		var ps []struct{ Records []map[string]any }
		e.lookOrRun("/v1/panes", &ps, "ls", "--json")
		if len(ps) != 1 {
			return ""
		}
		b, _ := json.Marshal(ps[0].Records)
		return string(b)
	}
	before := records()
	if !strings.Contains(before, `"id":"build"`) || !strings.Contains(before, "compiling") {
		t.Fatalf("records before: %s", before)
	}
	waitFor(t, 5*time.Second, "the records in the table", func() bool {
		return strings.Contains(tableText(filepath.Join(e.dir, "state")), `"Msg":"compiling"`)
	})
	daemon := daemonPID(t, e)
	syscall.Kill(daemon, syscall.SIGKILL)
	waitFor(t, 5*time.Second, "the daemon to die", func() bool { return !proctest.Alive(daemon) })
	if after := records(); after != before {
		t.Fatalf("records before the crash: %s\nafter: %s", before, after)
	}
	e.must("send", "rec", "go", "--enter")
	e.must("wait", "rec", "--state", "blocked", "--timeout", "10s")
	if p := e.pane("rec"); p.Source != "hook" || p.Message != "approve Bash: make" {
		t.Fatalf("after the hook: %+v", p)
	}
	e.must("shutdown")
	noneLeft(t, "shutdown", "1023")
}
