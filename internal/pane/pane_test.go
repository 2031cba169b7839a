package pane

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	rulesdata "github.com/corral-dev/corral/agents"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/holder"
	"github.com/corral-dev/corral/internal/lab/fakeagent"
	"github.com/corral-dev/corral/internal/proctest"
	"github.com/corral-dev/corral/internal/rules"
)

// The test binary doubles as the fake agent.
func TestMain(m *testing.M) {
	if os.Getenv("CORRAL_FAKE_AGENT") == "1" {
		os.Exit(fakeagent.Main(os.Args[1:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "hold" { // a pane's holder
		os.Exit(holder.Main(os.Stdin, os.Stdout, os.Stderr))
	}
	// The tests mostly wait on programs and timers.
	proctest.MoreParallel(4)
	// The goroutine counts wait for the shared goroutines to end; the
	// benchmarks measure what the daemon keeps, so they keep its pace.
	if flag.Lookup("test.bench").Value.String() == "" {
		deepIdle = 200 * time.Millisecond
	}
	os.Exit(m.Run())
}

func ruleSet(t *testing.T) *rules.Set {
	t.Helper()
	// The embedded manifests, plus one that recognises this test binary as
	// the fake agent when it runs in the foreground.
	fake := "name = \"fake\"\n[detect]\nprocess = [\"" + filepath.Base(os.Args[0]) + "\"]\n[answers]\nyes = \"1\"\nno = \"2\"\n" +
		"[[rule]]\nid = \"permission\"\nstate = \"blocked\"\nkind = \"permission\"\nregion = \"below_last_rule\"\npattern = '(?s)(?P<msg>Do you want to [^\\n]*?\\?).*1\\. Yes'\n" +
		"[[rule]]\nid = \"working\"\nstate = \"working\"\nregion = \"bottom:2\"\npattern = 'esc to interrupt'\n"
	fsys := fstest.MapFS{"fake.toml": {Data: []byte(fake)}}
	entries, _ := rulesdata.Rules.ReadDir(".")
	for _, e := range entries {
		data, _ := rulesdata.Rules.ReadFile(e.Name())
		fsys[e.Name()] = &fstest.MapFile{Data: data}
	}
	set, errs := rules.Loader{Embedded: fsys}.Load(nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return set
}

// recorder keeps every change a pane reports.
type recorder struct {
	mu      sync.Mutex
	changes []detect.Change
}

func (r *recorder) add(_ *Pane, c detect.Change) {
	r.mu.Lock()
	r.changes = append(r.changes, c)
	r.mu.Unlock()
}

func (r *recorder) states() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []string
	for _, c := range r.changes {
		s = append(s, string(c.Decision.State))
	}
	return strings.Join(s, ",")
}

func startFake(t *testing.T, agent string, args ...string) (*Pane, *recorder) {
	t.Helper()
	rec := &recorder{}
	p, err := Start(Config{ID: "t1", Argv: append([]string{os.Args[0]}, args...), Env: []string{"CORRAL_FAKE_AGENT=1"},
		Cols: 80, Rows: 24, Rules: ruleSet(t), Agent: agent, OnChange: rec.add, Sweep: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(2 * time.Second) })
	return p, rec
}

// await polls the pane until pred holds, failing after timeout.
func await(t *testing.T, p *Pane, what string, pred func(Info) bool) Info {
	t.Helper()
	var in Info
	if !proctest.WaitFor(15*time.Second, func() bool { in = p.Info(); return pred(in) }) {
		t.Fatalf("timed out waiting for %s; pane is %+v\nscreen:\n%s", what, in.Decision, p.Snapshot().Text())
	}
	return in
}

func inState(s combine.State) func(Info) bool {
	return func(in Info) bool { return in.Decision.State == s }
}

func awaitScreen(t *testing.T, p *Pane, text string) {
	t.Helper()
	if !proctest.WaitFor(15*time.Second, func() bool { return strings.Contains(p.Snapshot().Text(), text) }) {
		t.Fatalf("timed out waiting for %q on screen:\n%s", text, p.Snapshot().Text())
	}
}

func TestFakeAgentTurnAndPrompt(t *testing.T) {
	t.Parallel()
	p, rec := startFake(t, "claude-code")
	awaitScreen(t, p, "? for shortcuts")
	if err := p.Input([]byte("work 0.6\r"), true); err != nil {
		t.Fatal(err)
	}
	// The task reads working (submitted) from the Enter on; then the
	// screen shows the work.
	in := await(t, p, "working on screen", func(in Info) bool {
		return in.Decision.State == combine.Working && in.Decision.Kind != detect.KindSubmitted
	})
	if in.Decision.Source != combine.SourceScreen || in.Decision.Rule != "working" {
		t.Fatalf("working decided by %s rule %q", in.Decision.Source, in.Decision.Rule)
	}
	await(t, p, "done", inState(combine.Done))
	p.MarkSeen()
	await(t, p, "idle after seen", inState(combine.Idle))

	if err := p.Input([]byte("ask\r"), true); err != nil {
		t.Fatal(err)
	}
	in = await(t, p, "blocked", inState(combine.Blocked))
	if in.Decision.Kind != "permission" || in.Decision.Message != "Do you want to proceed?" || in.Decision.Rule != "permission" {
		t.Fatalf("blocked: %+v", in.Decision)
	}
	// Guarded input is refused while blocked; nothing is typed.
	if err := p.Input([]byte("oops\r"), true); !errors.Is(err, ErrBlocked) {
		t.Fatalf("guarded input while blocked: %v", err)
	}
	if _, err := p.Answer("maybe"); !errors.Is(err, ErrNoAnswer) {
		t.Fatalf("unknown answer: %v", err)
	}
	if keys, err := p.Answer("yes"); err != nil || keys != "1" {
		t.Fatalf("answer: %q %v", keys, err)
	}
	await(t, p, "done after the answer", inState(combine.Done))
	if _, err := p.Answer("yes"); !errors.Is(err, ErrNotBlocked) {
		t.Fatalf("answer while not blocked: %v", err)
	}
	// No idle flashed between the answer and the work it allowed. Changes
	// reach OnChange from their own goroutine: wait for the last one.
	proctest.WaitFor(5*time.Second, func() bool { return strings.HasSuffix(rec.states(), ",done") })
	if got := rec.states(); !strings.Contains(got, "blocked,working,done") {
		t.Fatalf("changes %s", got)
	}
}

func TestFakeAgentReportsOSC7501(t *testing.T) {
	t.Parallel()
	p, _ := startFake(t, "claude-code", "--osc7501", "--command", "rm -rf build")
	awaitScreen(t, p, "? for shortcuts")
	p.Input([]byte("ask\r"), true)
	in := await(t, p, "blocked", inState(combine.Blocked))
	// The prompt on screen decides; the program's own words are the message.
	if in.Decision.Message != "approve Bash: rm -rf build" {
		t.Fatalf("blocked: %+v", in.Decision)
	}
	p.Answer("no")
	in = await(t, p, "idle by report", inState(combine.Idle))
	if in.Decision.Source != combine.SourceOSC7501 {
		t.Fatalf("after deny: %+v", in.Decision)
	}
}

func TestExitStatusAndScreenKept(t *testing.T) {
	t.Parallel()
	p, _ := startFake(t, "claude-code")
	awaitScreen(t, p, "? for shortcuts")
	p.Input([]byte("fail\r"), true)
	in := await(t, p, "exited", inState(combine.Exited))
	if in.ExitCode != 3 || in.Decision.ExitCode != 3 || !in.Exited {
		t.Fatalf("exit: %+v", in)
	}
	<-p.Done()
	if !strings.Contains(p.Snapshot().Text(), "? for shortcuts") || !strings.Contains(p.ANSI(), "for shortcuts") || len(p.StyledRows()) == 0 {
		t.Fatal("the last screen was not kept after exit")
	}
	if err := p.Input([]byte("x"), false); !errors.Is(err, ErrExited) {
		t.Fatalf("input after exit: %v", err)
	}
	// Only the last screen is kept: the emulator is released.
	if _, err := p.term.Write([]byte("x")); err == nil || p.term.Scrollback(1) != nil {
		t.Fatal("the exited pane kept its emulator")
	}
}

// A real sh -i: the foreground process group follows the job, and the
// agent is recognised from the foreground process.
func TestShellForegroundTracking(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	p, err := Start(Config{ID: "sh", Argv: []string{"sh", "-i"}, Env: []string{"CORRAL_FAKE_AGENT=1", "PS1=$ "},
		Cols: 80, Rows: 24, Rules: ruleSet(t), OnChange: rec.add, Sweep: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(2 * time.Second)
	awaitScreen(t, p, "$")
	p.Input([]byte("sleep 30\r"), true)
	await(t, p, "sleep in the foreground", func(in Info) bool { return in.Foreground == "sleep" })
	p.Input([]byte{3}, false) // Ctrl-C
	await(t, p, "the shell back", func(in Info) bool { return in.Foreground == "sh" })

	p.Input([]byte(os.Args[0]+"\r"), true)
	in := await(t, p, "the fake agent recognised", func(in Info) bool { return in.Agent == "fake" })
	awaitScreen(t, p, "? for shortcuts")
	p.Input([]byte("exit\r"), true)
	in = await(t, p, "agent exited, shell idle", func(in Info) bool {
		return in.Agent == "generic" && in.Decision.State == combine.Idle && in.Decision.Source == combine.SourceProcess
	})
	_ = in
}

// The foreground group's leader execs another program after the pane
// looked it up (a wrapper execs the agent; a shell's job is the
// foreground a moment before it execs its command): the agent is
// recognised from the program it became, not kept from before the exec.
func TestForegroundFollowsAnExec(t *testing.T) {
	t.Parallel()
	p, err := Start(Config{ID: "ex", Argv: []string{"sh", "-c", "sleep 0.5; exec " + os.Args[0]}, Env: []string{"CORRAL_FAKE_AGENT=1"},
		Cols: 80, Rows: 24, Rules: ruleSet(t), Sweep: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(2 * time.Second)
	await(t, p, "the wrapper in the foreground", func(in Info) bool { return in.Foreground == "sh" })
	await(t, p, "the fake agent recognised after the exec", func(in Info) bool { return in.Agent == "fake" })
}

// Kill ends the whole process group: a shell's background and foreground
// jobs are all gone, none left as orphans.
func TestKillLeavesNoOrphans(t *testing.T) {
	t.Parallel()
	p, err := Start(Config{ID: "k", Argv: []string{"sh", "-c", "sleep 300 & sleep 301 & echo started; sleep 302"},
		Cols: 80, Rows: 24, Rules: ruleSet(t)})
	if err != nil {
		t.Fatal(err)
	}
	awaitScreen(t, p, "started")
	pgid := p.Info().PID
	if n := proctest.GroupMembers(pgid); n < 3 {
		t.Fatalf("expected the shell's jobs in group %d, found %d", pgid, n)
	}
	if err := p.Kill(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("pane not reaped")
	}
	// The group got SIGKILL at the reap; dying takes the kernel a moment.
	if !proctest.WaitFor(5*time.Second, func() bool { return proctest.GroupMembers(pgid) == 0 }) {
		t.Fatalf("%d processes of group %d left behind", proctest.GroupMembers(pgid), pgid)
	}
	if in := p.Info(); in.Decision.State != combine.Exited || in.ExitCode != 128+int(syscall.SIGTERM) {
		t.Fatalf("after kill: %+v", in.Decision)
	}
}
