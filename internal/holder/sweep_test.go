package holder

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/procs"
	"github.com/corral-dev/corral/internal/proctest"
)

// The shared look finds, for each of several panes asking at once, what
// procs.Group finds on its own: the pane's process, its tree, and a
// grandchild that left the pane's session.
func TestSweepFindsWhatGroupFinds(t *testing.T) {
	const n = 6
	var groups []procs.Group
	var cmds []*exec.Cmd
	for i := 0; i < n; i++ {
		// A child in the session and a setsid grandchild outside it; the
		// pid of the latter is printed once it runs.
		cmd := exec.Command("sh", "-c", "sleep 1031 & setsid sh -c 'echo $$; exec sleep 1032' & wait")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 32)
		k, _ := out.Read(buf)
		if _, err := strconv.Atoi(strings.TrimSpace(string(buf[:k]))); err != nil {
			t.Fatalf("grandchild's pid: %q", buf[:k])
		}
		cmds = append(cmds, cmd)
		g := procs.Group{Root: cmd.Process.Pid} // an old record's: no start time
		if i%2 == 0 {
			g = procs.NewGroup(cmd.Process.Pid, "")
		}
		groups = append(groups, g)
	}
	t.Cleanup(func() {
		for i, g := range groups {
			g.KillAll(5 * time.Second)
			_ = cmds[i].Wait()
		}
	})
	// Each pane's processes: its sh, the sleep, the setsid sh's sleep.
	for _, g := range groups {
		proctest.WaitFor(10*time.Second, func() bool { return len(g.Descendants()) >= 3 })
	}
	var sw sweeper
	found := make([]int, n)
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			found[i] = sw.signal(g, 0) // signal 0: only looks
		}()
	}
	wg.Wait()
	for i, g := range groups {
		want := g.Descendants()
		got := readTable().descendants(g, nil)
		slices.Sort(want)
		slices.Sort(got)
		if len(want) < 3 || !slices.Equal(got, want) || found[i] != len(want) {
			t.Errorf("pane %d: the shared look found %v (%d when asked together), procs.Group %v", i, got, found[i], want)
		}
	}
	for i, g := range groups {
		if !sw.hangUpAndKill(g, 5*time.Second) {
			t.Errorf("pane %d: processes left after hangUpAndKill: %v", i, g.Descendants())
		}
	}
}

// A pane whose program's pid is another process's now (its start time
// differs) has none of it signalled by the shared look: not the process,
// its session, or its tree.
func TestSweepLeavesAnotherProcessAtThePid(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 1033 & setsid sleep 1034 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	own := procs.NewGroup(cmd.Process.Pid, "")
	t.Cleanup(func() {
		own.KillAll(5 * time.Second)
		_ = cmd.Wait()
	})
	var all []int
	if !proctest.WaitFor(10*time.Second, func() bool { all = own.Descendants(); return len(all) == 3 }) {
		t.Fatalf("the session's processes: %v", all)
	}
	other := procs.Group{Root: own.Root, Start: own.Start + 1, Mark: "CORRAL_PANE=not-the-victims"}
	var sw sweeper
	if n := sw.signal(other, syscall.SIGKILL); n != 0 {
		t.Errorf("the look signalled %d processes of another", n)
	}
	if !sw.hangUpAndKill(other, time.Second) {
		t.Error("hangUpAndKill found processes of another")
	}
	for _, pid := range all {
		if !proctest.Alive(pid) {
			t.Errorf("process %d of another was killed", pid)
		}
	}
	if !sw.hangUpAndKill(own, 5*time.Second) {
		t.Errorf("processes left after hangUpAndKill: %v", own.Descendants())
	}
}

func TestReadStat(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want proc
		ok   bool
	}{
		{"12 (sh) S 1 12 12 34816 12 4194560", proc{pid: 12, ppid: 1, pgid: 12, sid: 12}, true},
		{"40 (a) b) c) Z 39 38 37 0", proc{pid: 40, ppid: 39, pgid: 38, sid: 37, zombie: true}, true},
		{"7 (x) S 1 2", proc{}, false},
		{"7 (x)", proc{}, false},
		{"7 x S 1 2 3", proc{}, false},
		{"", proc{}, false},
	} {
		got, ok := parseStat(tc.want.pid, []byte(tc.stat))
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("%q: %+v %v, want %+v %v", tc.stat, got, ok, tc.want, tc.ok)
		}
	}
}
