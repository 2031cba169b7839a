package server

import (
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
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

// record logs and publishes one state change.
func (s *Server) record(id, name, agent string, c detect.Change) {
	if c.Held {
		s.policyHeld(id, c) // not a state of the pane's: nothing to log
		return
	}
	d := c.Decision
	ev := eventlog.Event{Time: c.At, Pane: id, Name: name, Agent: agent, State: string(d.State), Kind: d.Kind,
		Message: d.Message, Source: string(d.Source), Rule: d.Rule, Previous: string(c.Previous.State), PreviousKind: c.Previous.Kind}
	if d.State == combine.Exited || (d.Source == combine.SourceStream && (d.State == combine.Done || d.State == combine.Error)) {
		code := d.ExitCode
		ev.ExitCode = &code
	}
	ev = s.logEvent(ev)
	s.set.Touch(id)
	if !s.policyTakes(id, ev) {
		s.notify.Event(ev)
	}
}

// logEvent numbers an event, writes it to the log and publishes it, in
// the order of the numbers.
func (s *Server) logEvent(ev eventlog.Event) eventlog.Event {
	s.evMu.Lock()
	defer s.evMu.Unlock()
	ev, err := s.log.Append(ev)
	if err != nil {
		s.opts.Logf("event log: %v", err)
	}
	s.hub.Publish(ev)
	return ev
}
