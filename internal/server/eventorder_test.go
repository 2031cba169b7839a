package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/eventlog"
)

// Events logged from many goroutines at once (each pane delivers its own
// changes) reach a subscriber in the order of their numbers: a stream
// skips a number below the last it sent, so one out of order was lost
// (found at 1,000 panes changing state at once).
func TestEventsPublishedInOrder(t *testing.T) {
	elog, err := eventlog.Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{log: elog, hub: eventlog.NewHub(), opts: Options{Logf: t.Logf}}
	// Fewer than a subscriber's queue holds: none is dropped for being
	// behind, whatever the scheduling.
	const writers, each = 12, eventlog.QueueSize / 12
	for round := 0; round < 20; round++ {
		sub, _ := s.hub.Subscribe(^uint64(0))
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					s.logEvent(eventlog.Event{Time: time.Now(), Pane: fmt.Sprintf("p%d", w), State: "working"})
				}
			}()
		}
		wg.Wait()
		var last uint64
		for i := 0; i < writers*each; i++ {
			e := <-sub.C
			if e.Seq <= last {
				t.Fatalf("round %d: event %d after %d", round, e.Seq, last)
			}
			last = e.Seq
		}
		sub.Close()
	}
}

// A follower of /v1/events gets a thousand changes made at once, in
// order, without being dropped for falling behind (the hub's queue held
// 256, and each event was flushed on its own).
func TestEventsFollowerTakesABurst(t *testing.T) {
	elog, err := eventlog.Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{log: elog, hub: eventlog.NewHub(), opts: Options{Logf: t.Logf}}
	srv := httptest.NewServer(s.routes())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/events?follow=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The answer's headers come once the stream is subscribed.
	const n = 1000
	for i := 0; i < n; i++ {
		s.logEvent(eventlog.Event{Time: time.Now(), Pane: fmt.Sprintf("p%d", i), State: "blocked"})
	}
	sc := bufio.NewScanner(resp.Body)
	var last uint64
	for got := 0; got < n; got++ {
		if !sc.Scan() {
			t.Fatalf("the stream ended after %d of %d events: %v", got, n, sc.Err())
		}
		var e struct {
			Seq uint64 `json:"seq"`
			End string `json:"end"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.End != "" || e.Seq <= last {
			t.Fatalf("after %d events (last %d): %s", got, last, sc.Text())
		}
		last = e.Seq
	}
}
