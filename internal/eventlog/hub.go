package eventlog

import (
	"fmt"
	"sync"
)

// Hub hands events to subscribers. Publishing never blocks: each
// subscriber has a bounded queue, and one that falls behind is dropped with
// a reason rather than slowing a pane.
type Hub struct {
	mu     sync.Mutex // guards subs and recent
	subs   map[*Subscription]struct{}
	recent []Event // the last RecentSize events, for resuming
}

// RecentSize is how many events the hub keeps for subscribers resuming by
// sequence number.
const RecentSize = 1024

// QueueSize bounds each subscriber's queue: a thousand panes changing
// state at once, and as many as the hub keeps for resuming (a stream
// dropped then has lost more than a resume could give back).
const QueueSize = RecentSize

// Subscription receives events on C until it is closed; Reason says why
// when the hub closed it.
type Subscription struct {
	C      chan Event
	hub    *Hub
	mu     sync.Mutex
	reason string
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{subs: map[*Subscription]struct{}{}} }

// Publish sends an event to every subscriber.
func (h *Hub) Publish(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recent = append(h.recent, e)
	if len(h.recent) > RecentSize {
		h.recent = h.recent[len(h.recent)-RecentSize:]
	}
	for s := range h.subs {
		select {
		case s.C <- e:
		default:
			s.closeLocked(fmt.Sprintf("too far behind: more than %d events unread", QueueSize))
		}
	}
}

// Subscribe returns a subscription and the kept events after seq.
func (h *Hub) Subscribe(afterSeq uint64) (*Subscription, []Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &Subscription{C: make(chan Event, QueueSize), hub: h}
	h.subs[s] = struct{}{}
	var backlog []Event
	for _, e := range h.recent {
		if e.Seq > afterSeq {
			backlog = append(backlog, e)
		}
	}
	return s, backlog
}

// Close ends a subscription.
func (s *Subscription) Close() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.closeLocked("")
}

func (s *Subscription) closeLocked(reason string) {
	if _, ok := s.hub.subs[s]; !ok {
		return
	}
	delete(s.hub.subs, s)
	s.mu.Lock()
	s.reason = reason
	s.mu.Unlock()
	close(s.C)
}

// Reason says why the hub dropped the subscription ("" if it was closed
// by its owner).
func (s *Subscription) Reason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// CloseAll ends every subscription (the daemon is shutting down).
func (h *Hub) CloseAll(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.closeLocked(reason)
	}
}
