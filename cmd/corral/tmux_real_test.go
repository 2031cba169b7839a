package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/proctest"
)

// claudeDialog is the question of Claude Code's permission dialog.
const claudeDialog = "Do you want to proceed?"

// claudeReply is the mock model's reply once a tool has run.
const claudeReply = "Done. The tool ran."

// followedEvent is one line of corral events --follow, with when the
// test read it.
type followedEvent struct {
	Pane, Name, State, Kind, Message, Source, Rule, Previous string
	Time                                                     time.Time
	read                                                     time.Time
}

// eventFollower keeps every line of corral events --follow.
type eventFollower struct {
	mu  sync.Mutex
	evs []followedEvent
}

func followEvents(t *testing.T, e *env) *eventFollower {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, corralBin, "events", "--follow")
	cmd.Env, cmd.Dir = e.vars, e.dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f := &eventFollower{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			now := time.Now()
			var ev followedEvent
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			ev.read = now
			f.mu.Lock()
			f.evs = append(f.evs, ev)
			f.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); cmd.Wait(); <-done })
	return f
}

// of returns one pane's events so far.
func (f *eventFollower) of(pane string) []followedEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []followedEvent
	for _, ev := range f.evs {
		if ev.Pane == pane {
			out = append(out, ev)
		}
	}
	return out
}

func (f *eventFollower) dump(pane string) string {
	var b strings.Builder
	for _, ev := range f.of(pane) {
		fmt.Fprintf(&b, "%s (read %s) %s -> %s/%s source=%s rule=%s %s\n", ev.Time.Format("15:04:05.000"),
			ev.read.Format("15:04:05.000"), ev.Previous, ev.State, ev.Kind, ev.Source, ev.Rule, ev.Message)
	}
	return b.String()
}

// screenWatch polls tmux's own view of a pane (capture-pane, as fast as
// tmux answers) and notes when each text was first on it, and when first
// gone after that.
type screenWatch struct {
	mu      sync.Mutex
	seen    map[string]time.Time
	gone    map[string]time.Time
	polls   int
	frames  []frame // each distinct screen, with when first captured
	stopped chan struct{}
	cancel  func()
}

func watchScreen(ts *tmuxServer, target string, texts ...string) *screenWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &screenWatch{seen: map[string]time.Time{}, gone: map[string]time.Time{}, stopped: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(w.stopped)
		for ctx.Err() == nil {
			// The text was on the screen at some moment between the
			// command's start and its answer: the start is the earliest
			// it can have been seen.
			before := time.Now()
			out, err := ts.run("capture-pane", "-p", "-t", target)
			if err != nil {
				time.Sleep(5 * time.Millisecond) // the sampler's pace
				continue
			}
			w.mu.Lock()
			w.polls++
			if n := len(w.frames); n == 0 || w.frames[n-1].text != out {
				w.frames = append(w.frames, frame{before, out})
			}
			for _, s := range texts {
				_, was := w.seen[s]
				switch on := strings.Contains(out, s); {
				case on && !was:
					w.seen[s] = before
				case !on && was:
					if _, g := w.gone[s]; !g {
						w.gone[s] = before
					}
				}
			}
			w.mu.Unlock()
			time.Sleep(2 * time.Millisecond) // the sampler's pace

		}
	}()
	return w
}

type frame struct {
	at   time.Time
	text string
}

func (w *screenWatch) stop() { w.cancel(); <-w.stopped }

func (w *screenWatch) at(s string) (seen, gone time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[s], w.gone[s]
}

// sessionProcs lists the processes of a terminal session (a tmux pane's
// shell leads one; the agent started from it is in it).
func sessionProcs(sid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session …
		if i := bytes.LastIndexByte(b, ')'); i > 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) > 3 && f[3] == strconv.Itoa(sid) {
				out = append(out, pid)
			}
		}
	}
	return out
}

// realTurn is what one permission-asking turn measured.
type realTurn struct {
	sent, blockedWait, answerStart, answerEnd time.Time
	dialogSeen, dialogGone, replySeen         time.Time
	blocked                                   followedEvent            // the first blocked event
	blockedBy                                 map[string]followedEvent // the first blocked event of each source
	workedBefore                              bool                     // a working event before it
	states                                    string
	sources                                   map[string]bool
}

// TestRealClaudeCodeInTmux runs the real Claude Code CLI in panes of a
// private tmux server that corral did not start, against the loopback
// model server, and drives a permission-asking turn in each through
// corral tmux watch: idle when ready, working in the turn, blocked on the
// permission dialog, answered with corral answer (typed through tmux: the
// dialog goes and the tool runs), done and then idle after the turn; the
// windows keep their size. First from the screen alone (Claude Code
// started by hand before the watch, no hooks), then with corral integrate
// claude-code --global's hooks in its fresh HOME (Claude Code started in a
// new session while watched): the hooks find their pane from $TMUX and
// $TMUX_PANE, none is refused. It also measures how long after the dialog
// is on tmux's screen corral's blocked event comes. Opt-in like
// TestRealClaudeCode ($CORRAL_CLAUDE or claude on PATH).
func TestRealClaudeCodeInTmux(t *testing.T) {
	t.Parallel()
	e, f := claudeFixture(t)
	ts := newTmux(t, e)
	hookLog := filepath.Join(e.dir, "hooks.ndjson") // every hook's payload, with its time
	// What the user's tmux gives the shells in its panes: Claude Code's
	// fresh HOME and the loopback model server. (corral's socket is in
	// e.vars: the global hooks reach the test's daemon through it.)
	ts.env = append(ts.env, "HOME="+f.home, "ANTHROPIC_BASE_URL="+f.model.URL, "ANTHROPIC_API_KEY="+f.key,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"CORRAL_HOOK_LOG="+hookLog)
	// Registered after newTmux's, so run before it: end tmux and wait for
	// the Claude Codes to end (their last hooks reach the daemon still
	// running, and nothing writes into the test's folder once it is gone).
	var shells []int
	t.Cleanup(func() {
		ts.run("kill-server")
		proctest.WaitFor(10*time.Second, func() bool {
			left := 0
			for _, sid := range shells {
				left += len(sessionProcs(sid))
			}
			return left == 0
		})
	})
	events := followEvents(t, e)
	start := time.Now()
	at := func(tm time.Time) string {
		if tm.IsZero() {
			return "never"
		}
		return "+" + tm.Sub(start).Round(time.Millisecond).String()
	}

	// startClaude opens a session and types claude into its shell, as a
	// person would, and waits for its input box on tmux's own screen.
	startClaude := func(session string) {
		t.Helper()
		ts.must("new-session", "-d", "-s", session, "-x", "120", "-y", "32", "-c", f.work)
		pid, _ := strconv.Atoi(strings.TrimSpace(ts.must("display-message", "-p", "-t", session+":0.0", "#{pane_pid}")))
		shells = append(shells, pid)
		waitFor(t, 10*time.Second, "the shell's prompt in tmux "+session, func() bool {
			return strings.TrimSpace(ts.must("capture-pane", "-p", "-t", session+":0.0")) != ""
		})
		// The shell is a login shell: its profile may set PATH again, so
		// claude is typed by its path.
		ts.must("send-keys", "-t", session+":0.0", "-l", f.claude+" --permission-mode default")
		ts.must("send-keys", "-t", session+":0.0", "Enter")
		if !proctest.WaitFor(60*time.Second, func() bool {
			return strings.Contains(ts.must("capture-pane", "-p", "-t", session+":0.0"), "? for shortcuts")
		}) {
			t.Fatalf("Claude Code never showed its input box in tmux %s:\n%s", session, ts.must("capture-pane", "-p", "-t", session+":0.0"))
		}
	}

	type paneRow struct {
		ID, Name, Agent, State, Kind, Message, Source, Integration, Backend, Foreground string
		HooksRefused                                                                    int  `json:"hooks_refused"`
		HooksIgnored                                                                    int  `json:"hooks_ignored"`
		ExitCode                                                                        *int `json:"exit_code"`
		Cols, Rows                                                                      int
		Tmux                                                                            *struct{ Socket, Pane, Target string }
	}
	rows := func() []paneRow {
		cmd := exec.Command(corralBin, "ls", "--json")
		cmd.Env = e.vars
		out, _ := cmd.Output()
		var ps []paneRow
		json.Unmarshal(out, &ps)
		return ps
	}
	row := func(target string) (paneRow, bool) {
		for _, p := range rows() {
			if p.Tmux != nil && p.Tmux.Target == target && p.ExitCode == nil {
				return p, true
			}
		}
		return paneRow{}, false
	}

	// fail stops the test with everything corral and tmux say of a pane.
	fail := func(target, format string, args ...any) {
		t.Helper()
		scr, _, _ := e.run("screen", target)
		tm, _ := ts.run("capture-pane", "-p", "-t", target)
		ls, _, _ := e.run("ls", "--json")
		explain := ""
		if scr != "" {
			cmd := exec.Command(corralBin, "explain", "--agent", "claude-code", "--size", "120x32", "-")
			cmd.Env, cmd.Stdin = e.vars, strings.NewReader(scr)
			out, _ := cmd.CombinedOutput()
			explain = string(out)
		}
		p, _ := row(target)
		hooks, _ := os.ReadFile(hookLog)
		t.Fatalf(format+"\n--- corral screen %s:\n%s\n--- tmux capture-pane:\n%s\n--- ls --json:\n%s\n--- events:\n%s\n--- explain:\n%s\n--- hooks:\n%s",
			append(args, target, scr, tm, ls, events.dump(p.ID), explain, hooks)...)
	}

	// readyFor waits until corral sees Claude Code idle in the tmux pane,
	// then a moment more. Claude Code 2.1.197 asks its terminal (XTVERSION,
	// DA1, DECRQM) just after it first draws its input box, and keys typed
	// in the next moments were seen lost, or text and Enter taken as one
	// paste (the Enter a newline in the box, the prompt not sent), on a
	// loaded machine, with tmux send-keys alone as with corral send: that
	// is Claude Code's start, not corral's reading of it.
	readyFor := func(target string) paneRow {
		t.Helper()
		waitFor(t, 15*time.Second, target+" recognised as claude-code", func() bool {
			p, ok := row(target)
			return ok && p.Agent == "claude-code"
		})
		if _, errs, code := e.run("wait", target, "--state", "idle", "--timeout", "15s"); code != 0 {
			fail(target, "Claude Code's ready screen is not idle (%s)", errs)
		}
		time.Sleep(2 * time.Second) // a window: the ready screen must stay idle through it
		p, _ := row(target)
		if p.State != "idle" || p.Backend != "tmux" || p.Foreground != "claude" || p.Cols != 120 || p.Rows != 32 {
			fail(target, "before the turn: %+v, want claude-code idle on the tmux backend, 120x32", p)
		}
		return p
	}

	// turn drives one permission-asking turn: the prompt typed with corral
	// send, the dialog waited for with corral wait and answered with
	// corral answer at once (as a script would), the tool's proof file
	// written, the turn over.
	turn := func(target, prompt, proof string) realTurn {
		t.Helper()
		var r realTurn
		p, _ := row(target)
		sw := watchScreen(ts, target, claudeDialog, claudeReply)
		defer sw.stop()
		r.sent = time.Now()
		e.must("send", target, prompt, "--enter")
		if _, errs, code := e.run("wait", target, "--state", "blocked", "--timeout", "60s"); code != 0 {
			fail(target, "never blocked (%s)", errs)
		}
		r.blockedWait = time.Now()
		r.answerStart = time.Now()
		if _, errs, code := e.run("answer", target, "yes"); code != 0 {
			fail(target, "corral answer: exit %d: %s", code, errs)
		}
		r.answerEnd = time.Now()
		// The tool sleeps a few seconds: working meanwhile.
		if _, errs, code := e.run("wait", target, "--state", "working", "--timeout", "10s"); code != 0 {
			fail(target, "not working while the tool runs (%s)", errs)
		}
		waitFor(t, 30*time.Second, "the dialog gone from tmux and the reply shown", func() bool {
			tm := ts.must("capture-pane", "-p", "-t", target)
			return !strings.Contains(tm, claudeDialog) && strings.Contains(tm, claudeReply)
		})
		if _, errs, code := e.run("wait", target, "--state", "done,idle", "--timeout", "30s"); code != 0 {
			fail(target, "the turn never ended (%s)", errs)
		}
		if _, err := os.Stat(proof); err != nil {
			fail(target, "the tool did not run: %v", err)
		}
		// Looking marks a done seen: idle, and it stays idle.
		e.must("screen", target)
		if _, errs, code := e.run("wait", target, "--state", "idle", "--timeout", "10s"); code != 0 {
			fail(target, "not idle after the turn (%s)", errs)
		}
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if p, _ := row(target); p.State != "idle" {
				fail(target, "a seen turn's end came back: %+v", p)
			}
		}
		sw.stop()
		r.dialogSeen, r.dialogGone = sw.at(claudeDialog)
		r.replySeen, _ = sw.at(claudeReply)
		if r.dialogSeen.IsZero() {
			fail(target, "tmux never showed the permission dialog (%d captures)", sw.polls)
		}
		// The events of the turn, in order: blocked/permission, working
		// while the tool runs, idle at the end.
		r.sources, r.blockedBy = map[string]bool{}, map[string]followedEvent{}
		var states []string
		for _, ev := range events.of(p.ID) {
			if ev.Time.Before(r.sent.Add(-time.Second)) {
				continue
			}
			states = append(states, ev.State+"/"+ev.Kind+"("+ev.Source+")")
			r.sources[ev.Source] = true
			if ev.State == "blocked" && r.blocked.State == "" {
				r.blocked = ev
			}
			if _, ok := r.blockedBy[ev.Source]; ev.State == "blocked" && !ok {
				r.blockedBy[ev.Source] = ev
			}
			if ev.State == "working" && r.blocked.State == "" {
				r.workedBefore = true
			}
		}
		r.states = strings.Join(states, " ")
		if !r.workedBefore {
			// What tmux showed between the prompt and the dialog, each
			// screen's last lines.
			var b strings.Builder
			for _, fr := range sw.frames {
				if fr.at.After(r.dialogSeen) {
					break
				}
				lines := strings.Split(strings.TrimRight(fr.text, "\n "), "\n")
				fmt.Fprintf(&b, "%s:\n  %s\n", at(fr.at), strings.Join(lines[max(len(lines)-6, 0):], "\n  "))
			}
			t.Logf("%s: no working before the dialog; tmux's screens until it:\n%s", target, b.String())
		}
		ib := strings.Index(r.states, "blocked/permission")
		iw := strings.Index(r.states[max(ib, 0):], "working/")
		if ib < 0 || iw < 0 || !strings.HasPrefix(states[len(states)-1], "idle/") {
			fail(target, "the turn's states %q, want blocked/permission, working, then idle", r.states)
		}
		t.Logf("%s: states %s", target, r.states)
		t.Logf("%s: prompt sent %s; dialog on tmux's screen %s (%d captures); blocked event stamped %s, read by events --follow %s, wait returned %s",
			target, at(r.sent), at(r.dialogSeen), sw.polls, at(r.blocked.Time), at(r.blocked.read), at(r.blockedWait))
		for src, ev := range r.blockedBy {
			t.Logf("%s: blocked event from the %s %+v after the dialog on tmux's screen (read %+v after it)",
				target, src, ev.Time.Sub(r.dialogSeen).Round(time.Millisecond), ev.read.Sub(r.dialogSeen).Round(time.Millisecond))
		}
		t.Logf("%s: corral answer took %v; dialog gone from tmux %s (%v after the answer began); reply %s",
			target, r.answerEnd.Sub(r.answerStart).Round(time.Millisecond), at(r.dialogGone), r.dialogGone.Sub(r.answerStart).Round(time.Millisecond), at(r.replySeen))
		return r
	}

	// 1. The screen alone: Claude Code runs in tmux before corral watches
	// it, with no hooks of corral's.
	startClaude("plain")
	before := ts.sizes()
	if out := e.must("tmux", "watch", "-S", ts.sock); !strings.Contains(out, "watching tmux") {
		t.Fatalf("tmux watch said %q", out)
	}
	plainRow := readyFor("plain:0.0")
	ranPlain := filepath.Join(f.work, "ran-plain")
	f.model.SetCommand("ls -la /tmp && sleep 3 && touch " + ranPlain)
	plain := turn("plain:0.0", "corral:shell list the files in /tmp (screen only)", ranPlain)
	if sb := plain.blockedBy["screen"]; sb.Kind != "permission" || sb.Message != claudeDialog || plain.sources["hook"] {
		fail("plain:0.0", "with no hooks: blocked on %+v, sources %v; want the screen's permission rule only", plain.blocked, plain.sources)
	}
	t.Logf("screen only: a working event before the dialog: %v", plain.workedBefore)

	// 2. corral's hooks in Claude Code's own settings (the fresh HOME's
	// ~/.claude/settings.json); Claude Code started in a new session while
	// watched.
	integ := exec.Command(corralBin, "integrate", "claude-code", "--global")
	integ.Env = append(append([]string(nil), e.vars...), "HOME="+f.home)
	if out, err := integ.CombinedOutput(); err != nil || !strings.Contains(string(out), "added corral's hooks") {
		t.Fatalf("integrate --global: %v: %s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(f.home, ".claude", "settings.json")); err != nil || !strings.Contains(string(b), "--outside") {
		t.Fatalf("settings.json: %v\n%s", err, b)
	}
	startClaude("hooked")
	hookedRow := readyFor("hooked:0.0")
	// ls --json polled through the turn: the source shows hook.
	var srcMu sync.Mutex
	rowSources := map[string]bool{}
	pollCtx, stopPoll := context.WithCancel(context.Background())
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for pollCtx.Err() == nil {
			if p, ok := row("hooked:0.0"); ok {
				srcMu.Lock()
				rowSources[p.State+"/"+p.Source] = true
				srcMu.Unlock()
			}
			time.Sleep(20 * time.Millisecond) // the sampler's pace
		}
	}()
	// Before the daemon's shutdown: ls would start another daemon.
	t.Cleanup(func() { stopPoll(); <-polled })
	ranHooks := filepath.Join(f.work, "ran-hooks")
	f.model.SetCommand("ls -la /tmp && sleep 3 && touch " + ranHooks)
	hooked := turn("hooked:0.0", "corral:shell list the files in /tmp (with hooks)", ranHooks)
	stopPoll()
	<-polled
	srcMu.Lock()
	sawHookRow := rowSources["blocked/hook"]
	t.Logf("hooks: state/source in ls --json through the turn: %v", rowSources)
	srcMu.Unlock()
	// The hook's report and the screen's rule race for the dialog (the
	// PermissionRequest hook runs just before Claude Code draws it): either
	// may block the pane first; the hook's must come.
	if hb := hooked.blockedBy["hook"]; hb.Kind != "permission" || !strings.Contains(hb.Message, "ls -la /tmp") ||
		!hooked.workedBefore || !sawHookRow {
		fail("hooked:0.0", "with the global hooks: blocked on %+v (working before it: %v), ls sources %v; want the hook's permission for ls -la /tmp after its working",
			hooked.blockedBy, hooked.workedBefore, rowSources)
	}
	var st struct {
		HooksRefused int `json:"hooks_refused"`
	}
	c := client.New(filepath.Join(e.dir, "s.sock"))
	if err := c.Do(context.Background(), "GET", "/v1/status", nil, &st); err != nil || st.HooksRefused != 0 {
		t.Fatalf("hooks refused %d (%v), want 0", st.HooksRefused, err)
	}
	for _, p := range rows() {
		if p.HooksRefused != 0 {
			t.Fatalf("a pane refused hooks: %+v", p)
		}
		t.Logf("%s: source %s, integration %q, hooks ignored %d", p.Name, p.Source, p.Integration, p.HooksIgnored)
		if p.Name == "hooked:0.0" && p.Integration != "claude-code" {
			t.Errorf("hooked:0.0: integration %q, want claude-code (its hooks report)", p.Integration)
		}
	}
	if hooks, err := os.ReadFile(hookLog); err == nil {
		var names []string
		for _, l := range strings.Split(strings.TrimSpace(string(hooks)), "\n") {
			var h struct {
				Time    string
				Payload struct {
					Event string `json:"hook_event_name"`
				}
			}
			json.Unmarshal([]byte(l), &h)
			names = append(names, h.Time[11:23]+" "+h.Payload.Event)
		}
		t.Logf("hooks run: %s", strings.Join(names, ", "))
	}

	// The user's windows kept their size (the new session's is the size
	// it was made).
	after := ts.sizes()
	if !strings.Contains(after, before) || !strings.Contains(after, "hooked:0 120x32") {
		t.Fatalf("window sizes changed:\nbefore %s\nafter  %s", before, after)
	}
	t.Logf("window sizes before %q, after %q", strings.TrimSpace(before), strings.ReplaceAll(strings.TrimSpace(after), "\n", ", "))
	t.Logf("events:\n%s%s", events.dump(plainRow.ID), events.dump(hookedRow.ID))
}
