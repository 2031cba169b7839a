package pane

import (
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

// deepCalls takes a call to an idle shared goroutine; unbuffered, so that
// a send succeeds only when one waits.
var deepCalls = make(chan deepCall)

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
	c := deepCall{f: f, done: done}
	select {
	case deepCalls <- c:
	default:
		go deepWorker(c)
	}
	<-done
}

// goShared runs f on a shared goroutine, without waiting for it.
func goShared(f func()) {
	c := deepCall{f: f}
	select {
	case deepCalls <- c:
	default:
		go deepWorker(c)
	}
}

// deepWorkers counts the shared goroutines alive.
var deepWorkers atomic.Int32

func deepWorker(c deepCall) {
	deepWorkers.Add(1)
	defer deepWorkers.Add(-1)
	t := time.NewTimer(deepIdle)
	defer t.Stop()
	for {
		c.f()
		if c.done != nil {
			c.done <- struct{}{}
		}
		t.Reset(deepIdle)
		select {
		case c = <-deepCalls:
		case <-t.C:
			return
		}
	}
}
