package pane

import (
	"runtime/debug"
	"sync"
	"time"
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

// trimHeapLater asks for a trim once panes stop starting and ending.
func trimHeapLater() {
	heapTrim.mu.Lock()
	defer heapTrim.mu.Unlock()
	if heapTrim.t == nil {
		heapTrim.t = time.AfterFunc(trimAfter, debug.FreeOSMemory)
		return
	}
	heapTrim.t.Reset(trimAfter)
}
