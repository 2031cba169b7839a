package holder

import (
	"runtime"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// A holder's one processor becomes every processor while its panes are
// signalled (ended), and one again once none has been for wideFor; a
// process that runs on more than one (not a holder's) is left as it is.
func TestWidenWhileSignalling(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one processor: nothing to widen to")
	}
	was := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(was)
	var w widening
	w.signalled()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Fatalf("a process on %d processors was changed to %d", 2, got)
	}
	runtime.GOMAXPROCS(1)
	w.signalled()
	if got := runtime.GOMAXPROCS(0); got != runtime.NumCPU() {
		t.Fatalf("signalling: %d processors, want %d", got, runtime.NumCPU())
	}
	start := time.Now()
	if !proctest.WaitFor(5*wideFor, func() bool { w.mu.Lock(); defer w.mu.Unlock(); return runtime.GOMAXPROCS(0) == 1 }) {
		t.Fatalf("still %d processors %v after the last signal", runtime.GOMAXPROCS(0), 5*wideFor)
	}
	if d := time.Since(start); d < wideFor {
		t.Fatalf("back to one processor after %v, before wideFor (%v)", d, wideFor)
	}
}
