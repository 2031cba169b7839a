package httpapi

import (
	"net/http"

	"github.com/corral-dev/corral/internal/api"
)

// Admin is what the routes that run the daemon itself need of it: the web
// board, hand-over, restore, and watched tmux servers.
type Admin interface {
	// Board starts the web board (or says where it runs).
	Board(req api.BoardRequest) (api.BoardResult, error)
	// Handover prepares handing the panes to the next daemon; Shutdown
	// follows once it is answered.
	Handover(req api.HandoverRequest) (api.HandoverResult, error)
	Restore(req api.RestoreRequest) ([]api.Restored, error)
	TmuxServers() []api.TmuxServer
	WatchTmux(req api.TmuxRequest) (api.TmuxServer, error)
	UnwatchTmux(req api.TmuxRequest) error
}

func (h *handlers) handover(w http.ResponseWriter, r *http.Request) {
	var req api.HandoverRequest
	if !Decode(w, r, &req) {
		return
	}
	res, err := h.svc.Handover(req)
	answer(w, res, err)
	if err == nil {
		go h.svc.Shutdown()
	}
}

func (h *handlers) unwatchTmux(req api.TmuxRequest) (struct{}, error) {
	return struct{}{}, h.svc.UnwatchTmux(req)
}
