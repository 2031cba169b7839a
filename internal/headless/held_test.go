package headless

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/procs"
	"github.com/corral-dev/corral/internal/proctest"
)

// fakeHeld is a held run's program: its init line, then, once the file
// $GATE exists, a text and (unless $NO_RESULT) a result; it exits $CODE.
func fakeHeld() int {
	fmt.Println(initLine)
	fmt.Fprintln(os.Stderr, "Retrying in 1s (attempt 1 of 10)") // a stderr event before the gate
	for {
		if _, err := os.Stat(os.Getenv("GATE")); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Println(textLine)
	if os.Getenv("NO_RESULT") == "" {
		fmt.Println(resultLine)
	}
	code, _ := strconv.Atoi(os.Getenv("CODE"))
	return code
}

// events collects a run's events.
type events struct {
	mu  sync.Mutex
	evs []Event
}

func (e *events) add(ev Event) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
}

func (e *events) types() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.evs {
		out = append(out, string(ev.Type))
	}
	return strings.Join(out, ",")
}

func heldOptions(t *testing.T, dir, gate string, env ...string) Options {
	return Options{Agent: "claude", Argv: []string{os.Args[0]}, Env: append([]string{"FAKE_HELD=1", "GATE=" + gate}, env...),
		Spool: dir, Hold: []string{os.Args[0], "jobhold"}, Mark: "CORRAL_JOB=held-" + strconv.Itoa(os.Getpid()), Timeout: 20 * time.Second,
		OnStart: endAtCleanup(t, dir)}
}

// endAtCleanup returns an OnStart that has the held run ended, and its
// holder gone, when the test ends (a test that failed half-way leaves
// nothing running).
func endAtCleanup(t *testing.T, dir string) func(int) {
	return func(pid int) {
		// Cleanups run last first: the run's group is killed, then its
		// holder waited for.
		t.Cleanup(func() {
			proctest.WaitFor(5*time.Second, func() bool { // no holder answers
				c, err := net.Dial("unix", filepath.Join(dir, SpoolSocket))
				if err == nil {
					c.Close()
				}
				return err != nil
			})
		})
		// Only if it is still the run's group: the run ended long ago
		// may have left its pid to another package's process.
		proctest.KillGroupAtCleanup(t, pid)
	}
}

// A held run let go by one daemon and followed by the next has each of
// its events once, in order, and its outcome; so does one that ended
// while no daemon followed it.
func TestHeldRunAcrossDaemons(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		endUnseen  bool // the run ends before the next daemon follows it
		env        []string
		state      string
		code       int
		types      string // after the first daemon's, which are init and retry in either order
		reasonPart string
	}{
		{name: "followed again", state: "done", types: "assistant,result"},
		{name: "ended unseen", endUnseen: true, state: "done", types: "assistant,result"},
		{name: "failed unseen", endUnseen: true, env: []string{"NO_RESULT=1", "CODE=3"}, state: "error", code: 3,
			types: "assistant", reasonPart: "without a result event (exit status 3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, gate := t.TempDir(), filepath.Join(t.TempDir(), "gate")
			o := heldOptions(t, dir, gate, tc.env...)
			detach := make(chan struct{})
			var first events
			o.OnEvent = func(ev Event) {
				first.add(ev) // stdout and stderr are read apart: init and retry come in either order
				if got := first.types(); got == "init,retry" || got == "retry,init" {
					close(detach)
				}
			}
			o.Detach = detach
			if _, err := Run(context.Background(), o); err != ErrDetached {
				t.Fatalf("the first daemon's run: %v, want ErrDetached", err)
			}
			seen := first.types()
			os.WriteFile(gate, nil, 0o600)
			if tc.endUnseen {
				if !proctest.WaitFor(10*time.Second, func() bool { return HeldExited(dir) }) {
					t.Fatal("the held run did not end")
				}
			}
			var next events
			o = heldOptions(t, dir, gate, tc.env...)
			o.Adopt, o.Started = true, time.Now()
			o.OnEvent = next.add
			out, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := next.types(), seen+","+tc.types; got != want {
				t.Errorf("the next daemon's events: %s, want %s", got, want)
			}
			if out.State != tc.state || out.ExitCode != tc.code || !strings.Contains(out.Reason, tc.reasonPart) || out.SessionID != "sess-42" {
				t.Errorf("outcome %+v", out)
			}
			if !strings.Contains(out.Stderr, "Retrying in 1s") {
				t.Errorf("stderr %q", out.Stderr)
			}
		})
	}
}

// A permission request left unanswered by a daemon that went is asked
// again by the next, and its answer reaches the agent, with the tool's
// input echoed.
func TestHeldPermissionAcrossDaemons(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := Options{Agent: "claude", Argv: []string{os.Args[0]}, Env: []string{"FAKE_STREAM=relay"}, Prompt: "do it",
		Spool: dir, Hold: []string{os.Args[0], "jobhold"}, Timeout: 20 * time.Second, OnStart: endAtCleanup(t, dir)}
	detach := make(chan struct{})
	o.Detach = detach
	o.OnPermission = func(Event, func(bool, string)) { close(detach) } // the daemon goes before anyone answers
	if _, err := Run(context.Background(), o); err != ErrDetached {
		t.Fatalf("the first daemon's run: %v, want ErrDetached", err)
	}
	var next events
	var asked Event
	o.Detach, o.Adopt, o.Started = nil, true, time.Now()
	o.OnEvent = next.add
	o.OnPermission = func(req Event, answer func(bool, string)) {
		asked = req
		answer(true, "corral answer yes")
	}
	out, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if asked.RequestID != "r1" || asked.Input != "rm -rf build" {
		t.Errorf("asked again: %+v", asked)
	}
	if got := next.types(); got != "init,permission,decision,assistant,result" {
		t.Errorf("events %s", got)
	}
	next.mu.Lock()
	text := next.evs[3].Text
	next.mu.Unlock()
	if out.State != "done" || text != "allow" {
		t.Errorf("the agent heard %q; outcome %+v", text, out)
	}
}

// A held run whose holder was killed while no daemon followed it ends in
// error, and its program does not go on unseen: the next daemon ends it,
// when the process at its pid is the one recorded (or nothing was
// recorded of it: a job held by an older daemon). A process at that pid
// that started at another time, and does not carry the job's mark, is
// another's (the program ended and its pid was given again): left alone.
func TestHeldHolderKilled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		record func(t *testing.T, dir string, o *Options) // what the next daemon finds
		ended  bool
	}{
		{"its start recorded", func(*testing.T, string, *Options) {}, true},
		{"no start recorded", func(t *testing.T, dir string, _ *Options) {
			if err := os.Remove(filepath.Join(dir, spoolStart)); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"another process at its pid", func(t *testing.T, dir string, o *Options) {
			b, err := os.ReadFile(filepath.Join(dir, spoolStart))
			start, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			if err != nil || start == 0 {
				t.Fatalf("the program's start time: %q, %v", b, err)
			}
			if err := os.WriteFile(filepath.Join(dir, spoolStart), []byte(strconv.FormatUint(start+1, 10)), 0o600); err != nil {
				t.Fatal(err)
			}
			o.Mark += "-not-this-one"
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, gate := t.TempDir(), filepath.Join(t.TempDir(), "gate")
			o := heldOptions(t, dir, gate)
			detach := make(chan struct{})
			pid := 0
			o.OnStart = func(p int) {
				pid = p
				endAtCleanup(t, dir)(p)
			}
			var once sync.Once
			o.OnEvent = func(Event) { once.Do(func() { close(detach) }) }
			o.Detach = detach
			if _, err := Run(context.Background(), o); err != ErrDetached {
				t.Fatalf("the first daemon's run: %v, want ErrDetached", err)
			}
			holder, _, ok := procs.Parent(pid)
			if !ok {
				t.Fatal("no holder")
			}
			syscall.Kill(holder, syscall.SIGKILL)
			if !proctest.WaitFor(5*time.Second, func() bool { _, err := os.Stat(filepath.Join(dir, SpoolSocket)); return err != nil || !alive(holder) }) {
				t.Fatal("the holder did not die")
			}
			o = heldOptions(t, dir, gate)
			o.Adopt, o.Started = true, time.Now()
			tc.record(t, dir, &o)
			out, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if out.State != "error" || !strings.Contains(out.Reason, "holder ended without") {
				t.Errorf("outcome %+v", out)
			}
			if !tc.ended {
				if !alive(pid) {
					t.Errorf("process %d, not the run's by its start time, was killed", pid)
				}
				return
			}
			if !proctest.WaitFor(5*time.Second, func() bool { return !alive(pid) }) {
				t.Errorf("the program %d outlived its holder and its job", pid)
			}
		})
	}
}

func alive(pid int) bool {
	_, zombie, ok := procs.Parent(pid)
	return ok && !zombie
}

// A held run ends as the same run not held: the same events, state,
// reason and exit status, however quickly it exits.
func TestHeldRunLikeUnheld(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"good", "noresult", "noresult0", "iserror"} {
		t.Run(mode, func(t *testing.T) {
			var plainEvs, heldEvs events
			o := Options{Agent: "claude", Argv: []string{os.Args[0]}, Env: []string{"FAKE_STREAM=" + mode}, Timeout: 20 * time.Second, OnEvent: plainEvs.add}
			plain, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			o.OnEvent, o.Spool, o.Hold = heldEvs.add, t.TempDir(), []string{os.Args[0], "jobhold"}
			held, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if heldEvs.types() != plainEvs.types() {
				t.Errorf("events held %s, not held %s", heldEvs.types(), plainEvs.types())
			}
			if held.State != plain.State || held.Reason != plain.Reason || held.ExitCode != plain.ExitCode || held.Stderr != plain.Stderr {
				t.Errorf("held %+v\nnot held %+v", held, plain)
			}
		})
	}
}
