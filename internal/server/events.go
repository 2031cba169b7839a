package server

import (
	"time"

	"github.com/corral-dev/corral/internal/eventlog"
)

// Subscribe follows the daemon's new events; backlog is the kept ones
// after the sequence number after.
func (s *Server) Subscribe(after uint64) (*eventlog.Subscription, []eventlog.Event) {
	return s.hub.Subscribe(after)
}

// EventsSince reads the event log from since on.
func (s *Server) EventsSince(since time.Time) ([]eventlog.Event, error) {
	evs, _, err := s.log.Since(since)
	return evs, err
}
