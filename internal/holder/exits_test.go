package holder

import (
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/procs"
	"github.com/corral-dev/corral/internal/proctest"
)

// One watch waits for many programs without a goroutine each: every
// program's exit is told once, to its own callback, whatever the order
// of the exits, and a program that exited before it was added counts.
func TestExitWatch(t *testing.T) {
	w := newExitWatch()
	type exit struct{ i, code int }
	exits := make(chan exit, 64)
	watch := func(i int, cmd *exec.Cmd) {
		w.add(cmd.Process.Pid, func() {
			cmd.Wait()
			exits <- exit{i, cmd.ProcessState.ExitCode()}
		})
	}
	// Exited before it is watched: a zombie, its SIGCHLD gone.
	early := exec.Command("/bin/sh", "-c", "exit 99")
	if err := early.Start(); err != nil {
		t.Fatal(err)
	}
	if !proctest.WaitFor(10*time.Second, func() bool { _, zombie, _ := procs.Parent(early.Process.Pid); return zombie }) {
		t.Fatal("the early program did not exit")
	}
	const n = 40
	before := runtime.NumGoroutine()
	watch(n, early)
	stdins := make([]io.WriteCloser, n)
	for i := range n {
		cmd := exec.Command("/bin/sh", "-c", "read code; exit $code")
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		stdins[i] = in
		watch(i, cmd)
	}
	if got := runtime.NumGoroutine() - before; got > 2 {
		t.Errorf("%d goroutines for %d programs running", got, n)
	}
	waitExit := func(want map[int]int) {
		t.Helper()
		for len(want) > 0 {
			select {
			case e := <-exits:
				code, ok := want[e.i]
				if !ok || e.code != code {
					t.Fatalf("program %d exited %d, told once more or unexpected (want %v)", e.i, e.code, want)
				}
				delete(want, e.i)
			case <-time.After(10 * time.Second):
				t.Fatalf("exits not told: %v", want)
			}
		}
	}
	waitExit(map[int]int{n: 99})
	// The odd ones first, from the last, then the even ones.
	odd, even := map[int]int{}, map[int]int{}
	for i := n - 1; i >= 0; i-- {
		if i%2 == 1 {
			fmt.Fprintf(stdins[i], "%d\n", i+1)
			odd[i] = i + 1
		}
	}
	waitExit(odd)
	for i := 0; i < n; i += 2 {
		fmt.Fprintf(stdins[i], "%d\n", i+1)
		even[i] = i + 1
	}
	waitExit(even)
	select {
	case e := <-exits:
		t.Fatalf("an exit told twice: %+v", e)
	case <-time.After(100 * time.Millisecond): // a window for a wrong second call, not a wait for one
	}
}
