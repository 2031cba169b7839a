package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/eventlog"
)

// Events is what the event routes need of the daemon.
type Events interface {
	// Subscribe follows new events; backlog is the kept ones after the
	// sequence number after (none for ^uint64(0)).
	Subscribe(after uint64) (sub *eventlog.Subscription, backlog []eventlog.Event)
	// EventsSince reads the log from since on.
	EventsSince(since time.Time) ([]eventlog.Event, error)
}

// events streams events as NDJSON: the logged ones since ?since (RFC
// 3339), or the kept ones after ?after (a sequence number), then, with
// ?follow=1, new ones as they happen.
func (h *handlers) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	follow := q.Get("follow") == "1"
	afterSeq := ^uint64(0) // the hub's kept events: none unless ?after
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			Fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("after %q is not a sequence number", v))
			return
		}
		afterSeq = n
	}
	var sub *eventlog.Subscription
	var backlog []eventlog.Event
	var after uint64
	if follow {
		// Subscribe before reading the log so nothing falls in between.
		sub, backlog = h.svc.Subscribe(afterSeq)
		defer sub.Close()
	}
	var since time.Time
	sinceSet := q.Get("since") != ""
	if v := q.Get("since"); sinceSet {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			Fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("since %q is not RFC 3339", v))
			return
		}
		since = t
	}
	// The answer starts before the log is read: reading a full log takes
	// a while, and clients give the daemon 10 s to start answering.
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	if sinceSet {
		evs, err := h.svc.EventsSince(since)
		if err != nil {
			_ = enc.Encode(api.StreamEnd{End: err.Error()})
			return
		}
		backlog = evs
	}
	for _, e := range backlog {
		if e.Seq > after {
			_ = enc.Encode(e)
			after = e.Seq
		}
	}
	if flusher != nil {
		flusher.Flush()
	}
	if !follow {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case e, ok := <-sub.C:
			if !ok {
				if reason := sub.Reason(); reason != "" {
					_ = enc.Encode(api.StreamEnd{End: reason})
				}
				return
			}
			// What is queued goes out with it, in one flush: a write a
			// change fell behind a thousand panes changing at once. (A
			// close meanwhile is seen at the next receive.)
			for {
				if e.Seq > after {
					after = e.Seq
					if err := enc.Encode(e); err != nil {
						return
					}
				}
				var more bool
				select {
				case e, more = <-sub.C:
				default:
				}
				if !more {
					break
				}
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

// eventsWS streams new events over a WebSocket, one JSON event per text
// message. The socket is the user's own (mode 0600), so any origin that
// reached it is the user's. Each client has its own queue in the hub and
// its own writer: one that stops reading is dropped when its queue fills,
// and never holds up a pane or another client.
func (h *handlers) eventsWS(w http.ResponseWriter, r *http.Request) {
	if h.eventSockets.Add(1) > api.MaxEventSockets {
		h.eventSockets.Add(-1)
		Fail(w, http.StatusServiceUnavailable, "busy", fmt.Errorf("the daemon serves %d event streams already; close some", api.MaxEventSockets))
		return
	}
	defer h.eventSockets.Add(-1)
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	defer c.CloseNow()
	after, _ := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
	sub, backlog := h.svc.Subscribe(after)
	defer sub.Close()
	ctx := c.CloseRead(r.Context())
	send := func(e eventlog.Event) bool {
		b, _ := json.Marshal(e)
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return c.Write(wctx, websocket.MessageText, b) == nil
	}
	for _, e := range backlog {
		if !send(e) {
			return
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-sub.C:
			if !ok {
				c.Close(websocket.StatusGoingAway, sub.Reason())
				return
			}
			if !send(e) {
				return
			}
		}
	}
}
