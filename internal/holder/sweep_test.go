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
		groups = append(groups, procs.Group{Root: cmd.Process.Pid})
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
