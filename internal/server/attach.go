package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/corral-dev/corral/internal/httpapi"
	"github.com/corral-dev/corral/internal/pane"
)

// paneSession is a terminal joined to one of this daemon's panes: a local
// attach, or another host's through the fleet.
type paneSession struct {
	p       *pane.Pane
	w       *pane.Watcher
	initial []byte
}

func (ps *paneSession) Initial() []byte       { return ps.initial }
func (ps *paneSession) Output() <-chan []byte { return ps.w.C }
func (ps *paneSession) Reason() string        { return ps.w.Reason() }
func (ps *paneSession) Resize(c, r int) error { return ps.p.Resize(c, r) }
func (ps *paneSession) Close()                { ps.w.Close() }

// Input types keys as a person at a terminal does: no guard.
func (ps *paneSession) Input(b []byte) error {
	err := ps.p.Input(b, false)
	if errors.Is(err, pane.ErrExited) {
		return fmt.Errorf("%w: %w", httpapi.ErrSessionOver, err)
	}
	return err
}

// Attach joins a terminal to a pane. The watcher comes first: a busy pane
// is an answer (503), not a session that never speaks.
func (s *Server) Attach(ref string) (httpapi.Session, error) {
	f, err := s.lookup(ref)
	if err != nil {
		return nil, err
	}
	if f.job != nil {
		return nil, httpapi.Coded(http.StatusConflict, "bad_request", errors.New("a headless job has no terminal to attach to; follow it with corral events --follow"))
	}
	p := f.pane.P
	initial, w, err := p.WatchWithin()
	if err != nil {
		return nil, inputError(err)
	}
	return &paneSession{p: p, w: w, initial: initial}, nil
}
