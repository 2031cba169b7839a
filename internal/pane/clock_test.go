package pane

import (
	"testing"
	"time"
)

// A wake-up is never early, at most one grid late, and entries due within
// one grid cell share it.
func TestFireTime(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ at, want time.Duration }{
		{0, 0},
		{1, clockGrid},
		{clockGrid - 1, clockGrid},
		{clockGrid, clockGrid},
		{clockGrid + time.Microsecond, 2 * clockGrid},
	} {
		if got := fireTime(base.Add(tc.at)); !got.Equal(base.Add(tc.want)) {
			t.Errorf("fireTime(+%v) = +%v, want +%v", tc.at, got.Sub(base), tc.want)
		}
	}
}

// A slow entry delays the others once, not every time: after its first
// slow run its work runs off the clock's goroutine.
func clockSlowWorkRunsAside(t *testing.T) {
	c := newClock()
	const rounds = 3
	const slowFor = 200 * time.Millisecond
	late := make(chan time.Duration, rounds)
	slow := &clockEntry{work: func() { time.Sleep(slowFor) }, kind: clockDeadline, index: -1}
	var due time.Time
	quick := &clockEntry{kind: clockDeadline, index: -1}
	quick.work = func() { late <- time.Since(due) }
	for i := 0; i < rounds; i++ {
		at := time.Now().Add(10 * time.Millisecond)
		due = at.Add(time.Millisecond)
		c.set(slow, at)
		c.set(quick, due)
		select {
		case d := <-late:
			if i > 0 && d > slowFor/2 {
				t.Fatalf("round %d: the quick entry ran %v late: the slow one still runs on the clock", i, d)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: the quick entry never ran", i)
		}
		time.Sleep(slowFor) // the slow work of this round ends
	}
	if !slow.slow.Load() {
		t.Fatal("the slow entry is not marked slow")
	}
}
