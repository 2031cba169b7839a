package holder

import (
	"runtime"
	"sync"
	"time"
)

// A holder runs on one processor (Main): it copies bytes, and a second one
// only adds threads woken to look for work at every frame. But ending its
// panes is work for every processor: a shutdown ends all of a holder's
// panes at once, and 220 of them in one process took twice as long as in
// two. So a signal to a pane (what ending one starts with) lets the
// holder use every processor until none has come for wideFor.
type widening struct {
	mu    sync.Mutex
	wide  bool
	timer *time.Timer
}

const wideFor = time.Second

var widen widening

// signalled is called as a pane is signalled.
func (w *widening) signalled() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if runtime.GOMAXPROCS(0) != 1 && !w.wide {
		return // not a holder's process (a test's): left as it is
	}
	if !w.wide {
		w.wide = true
		runtime.GOMAXPROCS(runtime.NumCPU())
	}
	if w.timer == nil {
		w.timer = time.AfterFunc(wideFor, w.narrow)
	} else {
		w.timer.Reset(wideFor)
	}
}

func (w *widening) narrow() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wide {
		w.wide = false
		runtime.GOMAXPROCS(1)
	}
}
