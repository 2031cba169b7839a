package pane

import (
	"container/heap"
	"sync"
	"sync/atomic"
	"time"
)

// The clock runs every pane's timed work from one goroutine: the engine's
// classification deadlines (the trailing edge of a quiet window) and the
// sweep. One runtime timer and one goroutine for every pane, instead of a
// timer goroutine per deadline and a ticker goroutine per pane: at 50
// spinning panes that is most of the daemon's wake-ups.
//
// The clock never waits for a pane: one whose lock is held (its read loop
// is feeding a flood, a request has it) gets its work on a goroutine of its
// own, as before, so a busy pane delays no other. Nor, more than once, for
// a pane whose work is slow (a huge screen, a costly rule): work that took
// longer than slowWork runs on a goroutine of its own the next times, until
// it is quick again.
var paneClock = newClock()

// slowWork is the clock's budget for one entry's work.
const slowWork = 10 * time.Millisecond

type clockKind uint8

const (
	clockDeadline clockKind = iota
	clockSweep
)

type clockEntry struct {
	at    time.Time
	work  func()
	kind  clockKind
	index int // in the heap; -1 when not in it
	// slow: the work took longer than slowWork last time.
	slow atomic.Bool
}

// run does the entry's work where the clock says: on the clock's goroutine
// while it is quick, on its own once it was slow.
func (e *clockEntry) run() {
	if e.slow.Load() {
		go e.timed()
		return
	}
	e.timed()
}

func (e *clockEntry) timed() {
	start := time.Now()
	e.work()
	e.slow.Store(time.Since(start) > slowWork)
}

type clockHeap []*clockEntry

func (h clockHeap) Len() int           { return len(h) }
func (h clockHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h clockHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *clockHeap) Push(x any) {
	e := x.(*clockEntry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *clockHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}

type clock struct {
	mu      sync.Mutex
	h       clockHeap
	timer   *time.Timer
	armed   time.Time // what timer fires for; zero when stopped
	started bool
	due     []*clockEntry // reused by run
}

func newClock() *clock {
	c := &clock{timer: time.NewTimer(time.Hour)}
	c.timer.Stop()
	return c
}

// set puts e in the heap to fire at at (moving it if it is there).
func (c *clock) set(e *clockEntry, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		c.started = true
		go c.run()
	}
	e.at = at
	if e.index >= 0 {
		heap.Fix(&c.h, e.index)
	} else {
		heap.Push(&c.h, e)
	}
	c.armLocked()
}

// remove takes e out of the heap.
func (c *clock) remove(e *clockEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.index >= 0 {
		heap.Remove(&c.h, e.index)
	}
}

// clockGrid is what the clock's wake-ups are rounded up to: every entry
// due within the same few milliseconds is run in one wake-up. At 50 busy
// panes, that is about 500 quiet-window deadlines a second in one
// wake-up each otherwise; a deadline comes at most this much late, and
// never early (a quiet window only lengthens).
const clockGrid = 4 * time.Millisecond

// fireTime is when the clock wakes for an entry due at at.
func fireTime(at time.Time) time.Time {
	f := at.Truncate(clockGrid)
	if f.Before(at) {
		f = f.Add(clockGrid)
	}
	return f
}

// armLocked makes the timer fire for the earliest entry, if it would not
// already fire by then.
func (c *clock) armLocked() {
	if len(c.h) == 0 {
		return // a timer that fires for nothing is harmless
	}
	at := fireTime(c.h[0].at)
	if !c.armed.IsZero() && !at.Before(c.armed) {
		return
	}
	c.armed = at
	c.timer.Reset(max(time.Until(at), 0))
}

func (c *clock) run() {
	for range c.timer.C {
		for {
			c.mu.Lock()
			c.armed = time.Time{}
			now := time.Now()
			c.due = c.due[:0]
			for len(c.h) > 0 && !c.h[0].at.After(now) {
				c.due = append(c.due, heap.Pop(&c.h).(*clockEntry))
			}
			if len(c.due) == 0 {
				c.armLocked()
				c.mu.Unlock()
				break
			}
			due := c.due
			c.mu.Unlock()
			// Deadlines first: a prompt's classification does not wait
			// for the sweeps that fell due with it.
			for _, e := range due {
				if e.kind == clockDeadline {
					e.run()
				}
			}
			for _, e := range due {
				if e.kind == clockSweep {
					e.run()
				}
			}
		}
	}
}

// tryLock takes the pane's lock if it is free.
func (l lock) tryLock() bool {
	select {
	case l <- struct{}{}:
		return true
	default:
		return false
	}
}

// paneTimer is a pane's classification deadline on the clock.
type paneTimer struct{ e clockEntry }

func newPaneTimer(p *Pane) *paneTimer {
	return &paneTimer{e: clockEntry{work: p.fireDeadline, kind: clockDeadline, index: -1}}
}

func (t *paneTimer) reset(at time.Time) { paneClock.set(&t.e, at) }

// Stop takes the deadline off the clock.
func (t *paneTimer) Stop() { paneClock.remove(&t.e) }
