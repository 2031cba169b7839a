package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/api"
)

// The hub lists the queued jobs; every member lists the running ones,
// each with its host.
func TestJobListing(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	lw := newFakeLocal()
	w := f.join("w", lw, 0) // takes no jobs: one addressed to it stays queued
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.SubmitJob(ctx, "fjqueuedjob00001", api.ExecRequest{Name: "build", Agent: "claude", Command: []string{"true"}}, "w", 0, func([]byte) {})
	}()
	var rows []JobRow
	waitFor(t, 5*time.Second, "the job queued, on the hub's list", func() bool {
		var err error
		rows, err = f.hub.QueuedJobs(context.Background())
		return err == nil && len(rows) == 1
	})
	if r := rows[0]; r.Host != "w" || r.FleetJob != "fjqueuedjob00001" || r.From != "w" || r.State != "queued" || r.Name != "build" {
		t.Fatalf("queued: %+v", r)
	}
	cancel()
	<-done
	// A running job is a headless pane of its host.
	lw.mu.Lock()
	lw.order = append(lw.order, "j1")
	lw.panes["j1"] = api.Pane{ID: "j1", Name: "job", Agent: "claude", State: "working", Backend: "headless", Since: time.Now().UTC().Format(time.RFC3339Nano)}
	lw.mu.Unlock()
	lw.set("p1", "idle") // not a job
	waitFor(t, 5*time.Second, "w's running job on the hub", func() bool {
		running := f.hm.RunningJobs()
		return len(running) == 1 && running[0].Host == "w" && running[0].ID == "j1" && running[0].State == "working"
	})
}
