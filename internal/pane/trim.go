package pane

import (
	"runtime/debug"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/procs"
)

// trimAfter is how long after the last pane started or ended the process
// gives its heap's free pages back to the system.
const trimAfter = 2 * time.Second

// heapTrim is the pending trim of the process's heap. Starts make
// garbage (a request's decoding, a holder's start, an engine's first
// screens) and push the heap past what the panes keep; the runtime's
// scavenger returns what is free above its goal only slowly (about 1 %
// of a core), and keeps up to a tenth over it for good. One forced
// collection once starts pause costs a few milliseconds.
var heapTrim struct {
	mu sync.Mutex
	t  *time.Timer
}

// trimProcess gives the heap's free pages back, and the pages of the
// binary that the process's start and the panes' starts touched: the
// daemon keeps running a small part of it.
func trimProcess() {
	_, _ = procs.ReleaseCodePages() // a trim that fails costs memory, nothing else
	debug.FreeOSMemory()            // after: the collection frees what the release read with
}

// trimHeapLater asks for a trim once panes stop starting and ending.
func trimHeapLater() {
	heapTrim.mu.Lock()
	defer heapTrim.mu.Unlock()
	if heapTrim.t == nil {
		heapTrim.t = time.AfterFunc(trimAfter, trimProcess)
		return
	}
	heapTrim.t.Reset(trimAfter)
}
