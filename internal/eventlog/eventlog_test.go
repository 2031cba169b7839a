package eventlog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func TestLogSurvivesReopenAndTornLines(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		e, err := l.Append(Event{Time: t0.Add(time.Duration(i) * time.Minute), Pane: "p1", State: "working", Previous: "idle"})
		if err != nil || e.Seq != uint64(i+1) {
			t.Fatalf("append %d: %+v %v", i, e, err)
		}
	}
	l.Close()
	// A crash mid-write leaves a torn line; it is skipped, not fatal.
	f, _ := os.OpenFile(filepath.Join(dir, FileName), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"seq":4,"time":"2026-12-01T10:0`)
	f.Close()

	l, err = Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e, _ := l.Append(Event{Time: t0.Add(5 * time.Minute), Pane: "p1", State: "idle"})
	if e.Seq != 4 {
		t.Fatalf("seq after reopen = %d, want 4", e.Seq)
	}
	evs, skipped, err := l.Since(t0.Add(time.Minute))
	if err != nil || skipped != 1 || len(evs) != 2 {
		t.Fatalf("since: %d events, %d skipped, %v", len(evs), skipped, err)
	}
}

func TestLogRotates(t *testing.T) {
	dir := t.TempDir()
	l, _ := Open(dir, 2000)
	defer l.Close()
	for i := 0; i < 100; i++ {
		l.Append(Event{Time: t0, Pane: "p1", State: "working", Message: strings.Repeat("x", 50)})
	}
	for _, name := range []string{FileName, FileName + ".1"} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || info.Size() > 2000 {
			t.Fatalf("%s: %v %v", name, info, err)
		}
	}
	evs, _, _ := l.Since(time.Time{})
	if len(evs) == 0 || evs[len(evs)-1].Seq != 100 {
		t.Fatalf("after rotation: %d events", len(evs))
	}
}

func TestEventJSONShape(t *testing.T) {
	code := 3
	b, _ := json.Marshal(Event{Seq: 1, Time: t0.Add(1500 * time.Microsecond), Pane: "p1", State: "exited", Previous: "working", ExitCode: &code})
	s := string(b)
	for _, want := range []string{`"time":"2026-12-01T10:00:00.001Z"`, `"pane":"p1"`, `"previous":"working"`, `"exit_code":3`, `"kind":""`, `"source":""`} {
		if !strings.Contains(s, want) {
			t.Fatalf("%s lacks %s", s, want)
		}
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil || !back.Time.Equal(t0.Add(time.Millisecond)) {
		t.Fatalf("round trip: %+v %v", back, err)
	}
}

// A slow subscriber is dropped with a reason; publishing never waits.
func TestHubDropsSlowSubscriber(t *testing.T) {
	h := NewHub()
	slow, _ := h.Subscribe(0)
	fast, _ := h.Subscribe(0)
	got := 0
	for i := 1; i <= QueueSize+10; i++ {
		h.Publish(Event{Seq: uint64(i)})
		if e := <-fast.C; e.Seq == uint64(i) { // a subscriber that keeps up
			got++
		}
	}
	h.CloseAll("shutdown")
	if got != QueueSize+10 {
		t.Fatalf("fast subscriber got %d", got)
	}
	n := 0
	for range slow.C {
		n++
	}
	if n != QueueSize || !strings.Contains(slow.Reason(), "too far behind") {
		t.Fatalf("slow subscriber: %d events, reason %q", n, slow.Reason())
	}
	_, backlog := h.Subscribe(QueueSize)
	if len(backlog) != 10 || backlog[0].Seq != QueueSize+1 {
		t.Fatalf("resume backlog %d", len(backlog))
	}
}
