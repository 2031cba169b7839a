package procs

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/osproc"
	"github.com/corral-dev/corral/internal/proctest"
)

func alive(pid int) bool {
	p, ok := table()[pid]
	return ok && !p.Zombie()
}

// A process that left with setsid, whose parent exited, is found by its
// mark among the subreaper's adopted children, ended, and reaped.
func TestAdoptedOrphanFoundEndedReaped(t *testing.T) {
	if err := Subreaper(); err != nil {
		t.Skip(err)
	}
	mark := "CORRAL_PROCS_TEST=" + time.Now().Format("150405.000000")
	cmd := exec.Command("sh", "-c", "setsid sleep 31.7 & sleep 0.1")
	cmd.Env = append(os.Environ(), mark)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if _, err := Spawn(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	}); err != nil {
		t.Fatal(err)
	}
	root := cmd.Process.Pid
	g := Group{Root: root, Mark: mark}
	WaitExit(root)
	var orphan int
	if !proctest.WaitFor(5*time.Second, func() bool {
		for _, pid := range g.Descendants() {
			if pid != root {
				orphan = pid
			}
		}
		return orphan != 0
	}) {
		t.Fatal("the setsid orphan was not found")
	}
	if pp := table()[orphan].PPID; pp != os.Getpid() {
		t.Fatalf("orphan %d has parent %d, not the subreaper %d", orphan, pp, os.Getpid())
	}
	_ = cmd.Wait()
	Release(root)
	if !g.KillAll(5 * time.Second) {
		t.Fatal("processes survived KillAll")
	}
	if !proctest.WaitFor(5*time.Second, func() bool {
		Reap()
		_, ok := table()[orphan]
		return !ok
	}) {
		t.Fatalf("orphan %d is left (alive %v)", orphan, alive(orphan))
	}
}

// Reap leaves the children os/exec waits for alone.
func TestReapLeavesOwnChildren(t *testing.T) {
	if err := Subreaper(); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if _, err := Spawn(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	}); err != nil {
		t.Fatal(err)
	}
	WaitExit(cmd.Process.Pid)
	Reap()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("Wait after Reap: %v", err)
	}
	Release(cmd.Process.Pid)
}

// startSession starts sh -c script as the leader of a session of its own,
// with env added to the test's, and kills whatever is left of it (while its
// pids are still its own) when the test ends.
func startSession(t *testing.T, script string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := NewGroup(cmd.Process.Pid, "")
	t.Cleanup(func() {
		g.KillAll(5 * time.Second)
		_ = cmd.Wait()
	})
	return cmd
}

// A group whose root pid names another process now (pids come round: the
// start time differs) reaches nothing through it: not the process, its
// tree, its session or its process group. The same process, or a group
// whose start time was never recorded, is ended whole.
func TestGroupLeavesAnotherProcessAtItsPid(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(real uint64) uint64
		ours  bool
	}{
		{"its own process", func(real uint64) uint64 { return real }, true},
		{"start unknown (an old record)", func(uint64) uint64 { return 0 }, true},
		{"a later process at the pid", func(real uint64) uint64 { return real - 1 }, false},
		{"an earlier process at the pid", func(real uint64) uint64 { return real + 1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Its session and group (sleep 61.1), and its tree out of both
			// (setsid sleep 61.2).
			cmd := startSession(t, "sleep 61.1 & setsid sleep 61.2 & wait")
			root := cmd.Process.Pid
			own := NewGroup(root, "")
			if own.Start == 0 {
				t.Fatalf("no start time for process %d", root)
			}
			var all []int
			if !proctest.WaitFor(5*time.Second, func() bool {
				all = own.Descendants()
				return len(all) == 3
			}) {
				t.Fatalf("the session's processes are %v, want sh and two sleeps", all)
			}
			g := Group{Root: root, Start: tc.start(own.Start), Mark: "CORRAL_PROCS_TEST=not-the-victims"}
			if !tc.ours {
				if got := g.Descendants(); len(got) != 0 {
					t.Errorf("Descendants = %v, want none of another process", got)
				}
				if g.RootState() != RootOther {
					t.Errorf("RootState = %v, want RootOther", g.RootState())
				}
				if err := g.SignalGroup(syscall.SIGKILL); err != nil {
					t.Errorf("SignalGroup: %v", err)
				}
				if n := g.Signal(syscall.SIGKILL); n != 0 {
					t.Errorf("Signal found %d processes", n)
				}
				if !g.KillAll(time.Second) {
					t.Error("KillAll found processes to kill")
				}
				for _, pid := range all {
					if !proctest.Alive(pid) {
						t.Errorf("process %d of another was killed", pid)
					}
				}
				return
			}
			if !g.KillAll(5 * time.Second) {
				t.Fatal("processes survived KillAll")
			}
			// Killed is not yet gone: a process runs its exit once it is
			// scheduled, which under load is after KillAll no longer finds
			// it (sleep 61.2, out of the session, leaves the tree when sh
			// dies).
			for _, pid := range all {
				if !proctest.WaitFor(5*time.Second, func() bool { return !proctest.Alive(pid) }) {
					t.Errorf("process %d (%s) survived", pid, osproc.CommandLine(pid))
				}
			}
		})
	}
}

// Once its root is gone, a session's id may since have been another
// process's, which led a session of its own and left it behind: with the
// root's start time known, a process of session Root is taken only if it
// carries the group's mark. Without it, as before, every one is.
func TestGroupOfAGoneRootTakesItsSessionByMark(t *testing.T) {
	mark := "CORRAL_PROCS_GONE=" + time.Now().Format("150405.000000")
	name, _, _ := strings.Cut(mark, "=")
	cmd := startSession(t, "sleep 62.1 & env -u "+name+" sleep 62.2 & exit 0", mark)
	root := cmd.Process.Pid
	g := NewGroup(root, mark)
	WaitExit(root)
	var marked, bare int
	if !proctest.WaitFor(5*time.Second, func() bool {
		marked, bare = 0, 0
		for pid, p := range table() {
			if p.SID != root || osproc.Name(pid) != "sleep" {
				continue
			}
			if hasMark(pid, mark) {
				marked = pid
			} else {
				bare = pid
			}
		}
		return marked != 0 && bare != 0
	}) {
		t.Fatalf("the session's sleeps: marked %d, bare %d", marked, bare)
	}
	proctest.KillAtCleanup(t, marked)
	proctest.KillAtCleanup(t, bare)
	_ = cmd.Wait() // the root's pid is free of its process now; the session keeps its id
	if g.RootState() != RootGone {
		t.Fatalf("RootState = %v, want RootGone", g.RootState())
	}
	for _, tc := range []struct {
		name  string
		start uint64
		want  []int
	}{
		{"start known", g.Start, []int{marked}},
		{"start unknown", 0, []int{marked, bare}},
	} {
		got := Group{Root: root, Start: tc.start, Mark: mark}.Descendants()
		slices.Sort(got)
		slices.Sort(tc.want)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: Descendants = %v, want %v (marked %d, bare %d)", tc.name, got, tc.want, marked, bare)
		}
	}
}
