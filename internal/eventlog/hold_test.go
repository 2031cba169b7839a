package eventlog

import (
	"sync"
	"testing"
	"time"
)

// Reading a full log (two 8 MB files) must not hold up the events being
// written meanwhile: Append waits for the files' bytes, never for their
// decoding.
func TestSinceDoesNotHoldAppend(t *testing.T) {
	l, err := Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	msg := "approve Bash: a command line long enough to make an event of some two hundred bytes"
	for l.size < DefaultMaxBytes-4096 || l.seq < 100 {
		if _, err := l.Append(Event{Time: time.Now(), Pane: "p1", Name: "n", Agent: "claude-code", State: "blocked", Kind: "permission", Message: msg}); err != nil {
			t.Fatal(err)
		}
		if l.seq > 200000 {
			t.Fatal("the log does not grow")
		}
	}
	var wg sync.WaitGroup
	start := time.Now()
	var readTook time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		evs, _, err := l.Since(time.Time{})
		readTook = time.Since(start)
		if err != nil || len(evs) == 0 {
			t.Errorf("Since: %d events, %v", len(evs), err)
		}
	}()
	time.Sleep(time.Millisecond) // let the read start
	var longest time.Duration
	for i := 0; i < 20; i++ {
		t0 := time.Now()
		if _, err := l.Append(Event{Time: time.Now(), Pane: "p1", State: "working"}); err != nil {
			t.Fatal(err)
		}
		longest = max(longest, time.Since(t0))
		time.Sleep(5 * time.Millisecond) // pacing: the appends spread over the read
	}
	wg.Wait()
	t.Logf("%d events; reading them took %v; the longest Append meanwhile took %v", l.seq, readTook.Round(time.Millisecond), longest.Round(time.Millisecond))
	if longest > readTook/2 && longest > 50*time.Millisecond {
		t.Fatalf("an Append waited %v for a read of %v", longest, readTook)
	}
}
