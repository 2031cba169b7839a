package pane

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/holder"
	"github.com/corral-dev/corral/internal/proctest"
	"github.com/corral-dev/corral/internal/status"
)

// holding returns a holder configuration for one pane of a test: the
// test binary doubles as the holder.
func holding(t *testing.T, id string) *Holding {
	t.Helper()
	dir, err := holder.SocketDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &Holding{Exe: os.Args[0], Socket: filepath.Join(dir, id+".sock"), Secret: holder.NewSecret()}
}

// cleanup ends a test's holder and program whatever the test did, a
// failed benchmark's too (their holders are sessions of their own).
func cleanup(t testing.TB, p *Pane) {
	_, hpid := p.Held()
	// Only what this test started: the pids ended long ago may name
	// another package's processes by now. Cleanups run last first: the
	// program's group, then its holder.
	proctest.KillAtCleanup(t, hpid)
	proctest.KillGroupAtCleanup(t, p.Info().PID)
}

// A held pane works as a pane of its own; detached, its program goes on,
// and a new pane adopted from the holder has the same screen and is live.
func TestHeldPaneDetachAndAdopt(t *testing.T) {
	t.Parallel()
	h := holding(t, "h1")
	rec := &recorder{}
	cfg := Config{ID: "h1", Argv: []string{"sh", "-c", "printf 'one\\ntwo\\n'; read x; echo got-$x; read y"},
		Cols: 70, Rows: 20, Rules: ruleSet(t), OnChange: rec.add, Sweep: 200 * time.Millisecond, Holder: h}
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, p)
	awaitScreen(t, p, "two")
	held, hpid := p.Held()
	if !held || !proctest.Alive(hpid) {
		t.Fatalf("held %v, holder %d", held, hpid)
	}
	pid := p.Info().PID
	before := p.Snapshot().Text()
	if !p.Detach() {
		t.Fatal("not detached")
	}
	if !proctest.Alive(pid) || !proctest.Alive(hpid) {
		t.Fatal("the program or its holder ended with the detach")
	}
	hc, err := holder.Dial(h.Socket, h.Secret, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rec2 := &recorder{}
	cfg.OnChange = rec2.add
	q, err := Adopt(cfg, hc, Adopted{Last: p.Info().Decision})
	if err != nil {
		t.Fatal(err)
	}
	if after := q.Snapshot().Text(); after != before {
		t.Fatalf("screen before:\n%s\nafter adoption:\n%s", before, after)
	}
	if q.Info().PID != pid {
		t.Fatalf("adopted pid %d, want %d", q.Info().PID, pid)
	}
	if err := q.Input([]byte("hi\r"), false); err != nil {
		t.Fatal(err)
	}
	awaitScreen(t, q, "got-hi")
	if err := q.Kill(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-q.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("adopted pane not reaped")
	}
	if in := q.Info(); in.Decision.State != combine.Exited || in.ExitCode != 128+int(syscall.SIGTERM) {
		t.Fatalf("after kill: %+v code %d", in.Decision, in.ExitCode)
	}
	waitGone(t, pid, hpid)
}

func waitGone(t *testing.T, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		if !proctest.WaitFor(5*time.Second, func() bool { return !proctest.Alive(pid) }) {
			t.Fatalf("process %d left behind", pid)
		}
	}
}

// A program that exits while no daemon is connected leaves its status and
// last output with its holder, for the next daemon.
func TestHeldExitKeptForTheNextDaemon(t *testing.T) {
	t.Parallel()
	h := holding(t, "h2")
	gate := filepath.Join(t.TempDir(), "gate")
	cfg := Config{ID: "h2", Argv: []string{"sh", "-c", "read x; while [ ! -e " + gate + " ]; do sleep 0.01; done; echo bye-$x; exit 7"},
		Cols: 60, Rows: 10, Rules: ruleSet(t), Holder: h}
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, p)
	_, hpid := p.Held()
	pid := p.Info().PID
	// Typed, then detached; only then does the program answer and exit,
	// with nobody connected.
	if err := p.Input([]byte("x\r"), false); err != nil {
		t.Fatal(err)
	}
	p.Detach()
	os.WriteFile(gate, nil, 0o600)
	waitGone(t, pid)
	hc, err := holder.Dial(h.Socket, h.Secret, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("welcome %+v", hc.Welcome)
	q, err := Adopt(cfg, hc, Adopted{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-q.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("not ended: %+v %q", q.Info(), q.Snapshot().Text())
	}
	in := q.Info()
	if !in.Exited || in.ExitCode != 7 || !strings.Contains(q.Snapshot().Text(), "bye-x") {
		t.Fatalf("adopted an exited program: %+v\n%s", in, q.Snapshot().Text())
	}
	waitGone(t, hpid)
}

// A socket whose other end does not know the pane's secret is refused.
func TestHeldWrongSecretRefused(t *testing.T) {
	t.Parallel()
	h := holding(t, "h3")
	p, err := Start(Config{ID: "h3", Argv: []string{"sleep", "30"}, Cols: 60, Rows: 10, Rules: ruleSet(t), Holder: h})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(time.Second)
	if _, err := holder.Dial(h.Socket, holder.NewSecret(), 2*time.Second); err == nil || !strings.Contains(err.Error(), "secret") {
		t.Fatalf("dial with another secret: %v", err)
	}
	if p.Info().Exited {
		t.Fatal("the refused connection ended the pane")
	}
}

// A holder killed under a live pane: the pane ends (status -1, saying
// why) and so does every process of it.
func TestHeldHolderKilled(t *testing.T) {
	t.Parallel()
	h := holding(t, "h4")
	p, err := Start(Config{ID: "h4", Argv: []string{"sh", "-c", "sleep 1031 & echo up; sleep 1032"}, Cols: 60, Rows: 10, Rules: ruleSet(t), Holder: h})
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, p)
	awaitScreen(t, p, "up")
	_, hpid := p.Held()
	pid := p.Info().PID
	syscall.Kill(hpid, syscall.SIGKILL)
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the pane did not end with its holder")
	}
	if in := p.Info(); !in.Exited || in.ExitCode != -1 || !strings.Contains(p.Lost(), "holder") {
		t.Fatalf("after the holder died: %+v, %q", in, p.Lost())
	}
	if !proctest.WaitFor(5*time.Second, func() bool { return proctest.GroupMembers(pid) == 0 }) {
		t.Fatalf("%d processes of the pane left", proctest.GroupMembers(pid))
	}
}

// A holder killed under an adopted pane ends every process of it, the
// ones that ignore its hangup too, when its program is the process the
// holder named; when the process at the program's pid started at another
// time than the holder said (the program had ended and its pid been given
// to another process), that process, its session and group are left
// alone.
func TestHeldHolderKilledSparesARecycledPid(t *testing.T) {
	t.Parallel()
	for i, tc := range []struct {
		name     string
		recycled bool
	}{
		{"its program", false},
		{"another process at its pid", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("h7%d", i)
			h := holding(t, id)
			cfg := Config{ID: id, Argv: []string{"sh", "-c", "trap '' HUP; sleep 1036 & echo up; sleep 1037"},
				Cols: 60, Rows: 10, Rules: ruleSet(t), Holder: h}
			p, err := Start(cfg)
			if err != nil {
				t.Fatal(err)
			}
			cleanup(t, p)
			awaitScreen(t, p, "up")
			_, hpid := p.Held()
			var all []int
			if !proctest.WaitFor(5*time.Second, func() bool { all = p.group.Descendants(); return len(all) == 3 }) {
				t.Fatalf("the pane's processes: %v", all)
			}
			if !p.Detach() {
				t.Fatal("not detached")
			}
			hc, err := holder.Dial(h.Socket, h.Secret, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if hc.Welcome.ProgramStart == 0 {
				t.Fatal("the holder did not say when its program started")
			}
			if tc.recycled {
				hc.Welcome.ProgramStart++
			}
			q, err := Adopt(cfg, hc, Adopted{Last: p.Info().Decision})
			if err != nil {
				t.Fatal(err)
			}
			syscall.Kill(hpid, syscall.SIGKILL)
			select {
			case <-q.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the pane did not end with its holder")
			}
			if !strings.Contains(q.Lost(), "holder") {
				t.Fatalf("after the holder died: %q", q.Lost())
			}
			if !tc.recycled {
				waitGone(t, all...)
				return
			}
			for _, pid := range all {
				if !proctest.Alive(pid) {
					t.Errorf("process %d, not the pane's by its start time, was killed", pid)
				}
			}
		})
	}
}

// A held program ignores no signal its holder was spared (SigIgn in
// /proc is inherited across exec): it takes Ctrl-C and a hangup.
func TestHeldProgramSignalsDefault(t *testing.T) {
	t.Parallel()
	h := holding(t, "h5")
	p, err := Start(Config{ID: "h5", Argv: []string{"sleep", "1033"}, Cols: 60, Rows: 10, Rules: ruleSet(t), Holder: h})
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, p)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Info().PID))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok && strings.Trim(strings.TrimSpace(v), "0") != "" {
			t.Fatalf("the program ignores signals: %s", line)
		}
	}
	start := time.Now()
	if err := p.Kill(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGHUP did not end the program")
	}
	if in := p.Info(); in.ExitCode != 128+int(syscall.SIGHUP) {
		t.Fatalf("exit %d", in.ExitCode)
	}
	t.Logf("SIGHUP to exit: %v", time.Since(start))
}

// A daemon that reads the terminal itself (the shared ring) and one that
// takes the output from the holder (an older daemon's way) hand the same
// pane to each other: nothing printed in between is lost, and each can
// type into it.
func TestHeldSharedAndStreamHandOver(t *testing.T) {
	t.Parallel()
	h := holding(t, "h5")
	cfg := Config{ID: "h5", Argv: []string{"sh", "-c", `while read x; do echo "got-$x"; done`},
		Cols: 60, Rows: 20, Rules: ruleSet(t), Holder: h}
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, p)
	if p.hc.Ring == nil {
		t.Fatal("a new pane's daemon does not read the terminal itself")
	}
	if err := p.Input([]byte("one\r"), false); err != nil {
		t.Fatal(err)
	}
	awaitScreen(t, p, "got-one")
	for i, dial := range []func(string, string, time.Duration) (*holder.Conn, error){holder.DialStream, holder.Dial, holder.DialStream, holder.Dial} {
		word := fmt.Sprintf("w%d", i)
		// Typed, then let go before it is surely read: the answer is
		// printed with no daemon, or to the one going.
		if err := p.Input([]byte(word+"\r"), false); err != nil {
			t.Fatal(err)
		}
		p.Detach()
		time.Sleep(50 * time.Millisecond) // a gap with no daemon on purpose: the answer lands in it
		hc, err := dial(h.Socket, h.Secret, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if shared := hc.Ring != nil; shared != (i%2 == 1) {
			t.Fatalf("hand-over %d: shared ring %v", i, shared)
		}
		q, err := Adopt(cfg, hc, Adopted{})
		if err != nil {
			t.Fatal(err)
		}
		awaitScreen(t, q, "got-"+word)
		if err := q.Input([]byte("live"+word+"\r"), false); err != nil {
			t.Fatal(err)
		}
		awaitScreen(t, q, "got-live"+word)
		p = q
	}
	text := p.Snapshot().Text()
	for _, w := range []string{"got-one", "got-w0", "got-livew0", "got-w1", "got-w3", "got-livew3"} {
		if !strings.Contains(text, w) {
			t.Fatalf("%q lost:\n%s", w, text)
		}
	}
	p.Kill(syscall.SIGKILL)
	<-p.Done()
}

// A turn's end already seen stays seen across a hand-over: the replay of
// the ring ends that turn again, but a new one needs input, which only a
// daemon gives.
func TestHeldSeenDoneStaysIdleAcrossHandOver(t *testing.T) {
	t.Parallel()
	h := holding(t, "h6")
	working := status.Report{State: status.Working, Progress: status.NoProgress}.Encode()
	done := status.Report{State: status.Done, Progress: status.NoProgress}.Encode()
	script := fmt.Sprintf(`printf '%%s' '%s'; read x; printf '%%s answer\n' '%s'; read y; printf '%%s' '%s'; read z; printf '%%s again\n' '%s'; exec sleep 600`,
		working, done, working, done)
	cfg := Config{ID: "h6", Argv: []string{"sh", "-c", script}, Cols: 60, Rows: 10, Rules: ruleSet(t), Holder: h}
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, p)
	p.Input([]byte("go\r"), false)
	awaitState(t, p, combine.Done)
	p.MarkSeen()
	awaitState(t, p, combine.Idle)
	last, since := p.Info().Decision, p.Info().Since
	p.Detach()
	hc, err := holder.Dial(h.Socket, h.Secret, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Adopt(cfg, hc, Adopted{Last: last, Since: since})
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, q)
	if d := q.Info().Decision; d.State != combine.Idle {
		t.Fatalf("after the hand-over: %s (%s), want idle: the turn's end was seen", d.State, d.Source)
	}
	// A new turn, ended with nobody looking, is done again.
	q.Input([]byte("more\r"), false)
	awaitState(t, q, combine.Working)
	q.Input([]byte("end\r"), false)
	awaitState(t, q, combine.Done)
}

func awaitState(t *testing.T, p *Pane, want combine.State) {
	t.Helper()
	if !proctest.WaitFor(5*time.Second, func() bool { return p.Info().Decision.State == want }) {
		d := p.Info().Decision
		t.Fatalf("state %s (%s), want %s; screen:\n%s", d.State, d.Source, want, p.Snapshot().Text())
	}
}
