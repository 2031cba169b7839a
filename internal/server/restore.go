package server

import (
	"fmt"
	"strings"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/httpapi"
	"github.com/corral-dev/corral/internal/panestore"
)

// Restored is api.Restored, named here for the commands that still use
// it from the daemon's package.
type Restored = api.Restored

// Restore starts again, in their folders with their names and sizes,
// the panes whose holders were gone when the daemon started, resuming
// their agents' conversations where the agent allows it.
func (s *Server) Restore(req api.RestoreRequest) ([]api.Restored, error) {
	out, missing := s.set.Restore(req.IDs, req.Forget)
	if len(missing) > 0 {
		return nil, httpapi.NotFound(fmt.Errorf("no lost pane named %s; corral ls shows the lost ones (state lost)", strings.Join(missing, ", ")))
	}
	return out, nil
}

// LostMessage is what a lost pane says in listings.
const LostMessage = panestore.LostMessage

// StateLost is the state of a pane whose program was lost; only listings
// show it (no event is in it).
const StateLost = panestore.StateLost
