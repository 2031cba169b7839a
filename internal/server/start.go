package server

import (
	"errors"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/headless"
)

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

// startJob registers and runs a headless job: held (it outlives the
// daemon, see jobstore.go) when it can be, otherwise guarded (it ends
// with the daemon).
func (s *Server) startJob(name string, o headless.Options, keep jobKeep) (*job, error) {
	id, _, err := s.set.Reserve(name)
	if err != nil {
		return nil, err
	}
	agent := o.Agent
	o.Mark = "CORRAL_JOB=" + id
	o.Env = append(o.Env[:len(o.Env):len(o.Env)], "CORRAL_SOCKET="+s.opts.Socket)
	o.Guard = []string{holderExe, "guard"}
	var onEnd func(headless.Outcome, time.Time)
	if heldMode(o) {
		rec, err := s.holdJob(id, name, &o, keep)
		if err != nil {
			s.opts.Logf("job %s: %v; it runs guarded, and ends with this daemon", id, err)
		} else {
			onEnd = s.keepOutcome(o.Spool, rec)
		}
	}
	j := startJob(id, name, o, func(c detect.Change) { s.record(id, name, agent, c) }, onEnd)
	j.fleet = keep.Fleet
	if !s.set.RegisterJob(id, name, j) {
		return nil, errors.New("the daemon is shutting down")
	}
	return j, nil
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
