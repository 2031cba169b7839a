package pane

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A pane's reading goroutine waits in the poller for as long as the pane
// lives, and a goroutine keeps the stack its deepest call needed (feeding
// the emulator, checkpointing, publishing the snapshot) until a collection
// finds it mostly unused: kilobytes a pane, a thousand times over, though
// most panes are idle at any moment. So the reading goroutine only reads,
// and hands each read to one of a few goroutines shared by every pane
// (deepCall), waiting until it is done: the order of a pane's reads is
// kept, and only the calls under way at once need deep stacks.

// idleWorkers are the shared goroutines waiting for a call, the one that
// became idle last at the end: a call goes to it. While calls come fewer
// at once than in a burst (the panes' starts, every pane drawing after a
// pause), the goroutines the burst started get none and end after
// deepIdle. A channel that every idle goroutine waits on would hand each
// call to the one that waited longest: every goroutine would get a call
// before deepIdle passed and none would end (at 300 spinning panes, 300
// goroutines and their stacks kept after a burst).
var idleWorkers struct {
	mu sync.Mutex
	ws []*idleWorker
}

// idleWorker is a shared goroutine's mailbox: the call handed to it while
// it is idle (capacity 1: handing it over never waits).
type idleWorker struct {
	calls chan deepCall
}

type deepCall struct {
	f    func()
	done chan struct{}
}

// deepIdle is how long a shared goroutine waits for the next call before
// it ends. A variable only so that tests, which wait for the shared
// goroutines to end, can shorten it before any starts.
var deepIdle = 5 * time.Second

// onDeepStack runs f on a shared goroutine and returns once it has; done
// (capacity 1, empty) is the caller's, reused from call to call. When no
// shared goroutine is idle a new one starts, so a call never waits behind
// another pane's (whose lock may be held).
func onDeepStack(f func(), done chan struct{}) {
	handOff(deepCall{f: f, done: done})
	<-done
}

// goShared runs f on a shared goroutine, without waiting for it.
func goShared(f func()) {
	handOff(deepCall{f: f})
}

func handOff(c deepCall) {
	idleWorkers.mu.Lock()
	if n := len(idleWorkers.ws); n > 0 {
		w := idleWorkers.ws[n-1]
		idleWorkers.ws[n-1] = nil
		idleWorkers.ws = idleWorkers.ws[:n-1]
		idleWorkers.mu.Unlock()
		w.calls <- c
		return
	}
	idleWorkers.mu.Unlock()
	go deepWorker(c)
}

// deepWorkers counts the shared goroutines alive.
var deepWorkers atomic.Int32

func deepWorker(c deepCall) {
	deepWorkers.Add(1)
	defer deepWorkers.Add(-1)
	w := &idleWorker{calls: make(chan deepCall, 1)}
	t := time.NewTimer(deepIdle)
	defer t.Stop()
	for {
		c.f()
		done := c.done
		c = deepCall{} // the call's closure is not kept while idle
		t.Reset(deepIdle)
		// Idle before the caller hears the call is done: its next call,
		// made at once, finds this goroutine rather than starting one.
		idleWorkers.mu.Lock()
		idleWorkers.ws = append(idleWorkers.ws, w)
		idleWorkers.mu.Unlock()
		if done != nil {
			done <- struct{}{}
		}
		select {
		case c = <-w.calls:
		case <-t.C:
			idleWorkers.mu.Lock()
			i := slices.Index(idleWorkers.ws, w)
			if i >= 0 {
				idleWorkers.ws = slices.Delete(idleWorkers.ws, i, i+1)
			}
			idleWorkers.mu.Unlock()
			if i >= 0 {
				return
			}
			// Handed a call as its time ran out: the call is on its way.
			c = <-w.calls
		}
	}
}
