package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// JobFeed is a headless job's events as its stream reads them.
type JobFeed interface {
	// Since returns the job's stream from event number next on (a line
	// saying how many it missed first, when the job no longer keeps them),
	// the number after them, a channel closed when more come, and whether
	// the job has ended (then Outcome is its last line).
	Since(next int) (lines []any, after int, more <-chan struct{}, ended bool)
	// Detached closes when the daemon lets the job go on for the next
	// daemon: the client takes the stream from it.
	Detached() <-chan struct{}
	Outcome() any
}

// StreamWriteWait bounds one write of a stream to its reader: one that
// stopped reading is dropped, never waited for.
const StreamWriteWait = 10 * time.Second

// jobStream streams a job's events from its start (or ?from=N, for a
// client that lost its stream to a restarted daemon), then its outcome.
func (h *handlers) jobStream(w http.ResponseWriter, r *http.Request) {
	feed, err := h.svc.JobFeed(r.PathValue("id"))
	if err != nil {
		WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	rc := http.NewResponseController(w)
	// Each write has a deadline: a reader that stopped reading is dropped,
	// never waited for.
	send := func(v any) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(StreamWriteWait))
		return enc.Encode(v) == nil && rc.Flush() == nil
	}
	_ = rc.Flush() // the headers, at once: the client waits for them with a deadline
	next, _ := strconv.Atoi(r.URL.Query().Get("from"))
	next = max(next, 0)
	for {
		lines, after, more, ended := feed.Since(next)
		for _, l := range lines {
			if !send(l) {
				return
			}
		}
		next = after
		if ended {
			break
		}
		select {
		case <-more:
		case <-feed.Detached():
			return
		case <-r.Context().Done():
			return
		}
	}
	send(map[string]any{"type": "outcome", "outcome": feed.Outcome()})
}
