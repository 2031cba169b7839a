package server

import (
	"errors"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/httpapi"
)

// The watched tmux servers and their panes are the pane set's
// (internal/paneset); these are their API routes.

// TmuxServers lists the watched tmux servers.
func (s *Server) TmuxServers() []api.TmuxServer { return s.set.TmuxServers() }

// WatchTmux watches a tmux server's panes.
func (s *Server) WatchTmux(req api.TmuxRequest) (api.TmuxServer, error) {
	tw, err := s.set.WatchTmux(req)
	if err != nil {
		return api.TmuxServer{}, httpapi.BadRequest(err)
	}
	// The panes the server has now are listed before the answer, so that
	// corral ls right after shows them (bounded: a slow server is listed
	// as its panes come).
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		st := tw.Status()
		if !st.Running && st.Err != "" || st.Running && len(tw.Panes())+int(tw.Skipped()) >= st.Panes && st.Panes > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, row := range s.set.TmuxServers() {
		if row.Socket == tw.Socket() {
			return row, nil
		}
	}
	return api.TmuxServer{}, errors.New("the tmux server stopped being watched")
}

// UnwatchTmux stops watching a tmux server.
func (s *Server) UnwatchTmux(req api.TmuxRequest) error {
	if err := s.set.UnwatchTmux(req); err != nil {
		return httpapi.NotFound(err)
	}
	return nil
}
