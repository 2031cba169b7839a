package server

import (
	"errors"
	"net"

	"github.com/corral-dev/corral/internal/handover"
)

// prepareHandover keeps a copy of the listening socket for passOn, and
// keeps its file when the listener is closed.
func (s *Server) prepareHandover(to string) error {
	s.mu.Lock()
	ul, ok := s.ln.(*net.UnixListener)
	s.mu.Unlock()
	if !ok {
		return errors.New("the daemon's listener is not a unix socket")
	}
	f, err := ul.File()
	if err != nil {
		return err
	}
	ul.SetUnlinkOnClose(false)
	s.handoverTo, s.handoverLn = to, f
	return nil
}

// passOn sends the lock and the listening socket to the new daemon. It
// reports whether they went: otherwise the daemon lets go of them as at a
// shutdown, and the new one takes them the ordinary way.
func (s *Server) passOn() bool {
	if s.handoverTo == "" || s.handoverLn == nil {
		return false
	}
	defer s.handoverLn.Close()
	s.mu.Lock()
	lock := s.lock
	s.mu.Unlock()
	if err := handover.Send(s.handoverTo, lock, s.handoverLn); err != nil {
		s.opts.Logf("%v; the socket is let go of instead", err)
		return false
	}
	s.opts.Logf("handed the lock and the socket over")
	return true
}
