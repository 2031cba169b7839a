package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/coder/websocket"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/httpapi"
	"github.com/corral-dev/corral/internal/pane"
)

// handleAttach joins a terminal to a pane over a WebSocket: binary messages
// to the client carry the program's output (first a redraw of the screen as
// it is); binary messages from the client are keys and pastes for the
// program; text messages from the client are JSON control (api.AttachControl).
// Several clients may attach at once. Attaching marks a finished turn seen.
func (s *Server) handleAttach(w http.ResponseWriter, r *http.Request) {
	f, ok := s.lookupHTTP(w, r)
	if !ok {
		return
	}
	if f.job != nil {
		httpapi.Fail(w, http.StatusConflict, "bad_request", errors.New("a headless job has no terminal to attach to; follow it with corral events --follow"))
		return
	}
	p := f.pane.p
	// The watcher comes first: a busy pane is an answer (503), not a
	// WebSocket that never speaks.
	initial, watcher, err := p.WatchWithin()
	if err != nil {
		httpapi.WriteError(w, inputError(err))
		return
	}
	defer watcher.Close()
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()

	go func() {
		defer cancel()
		for {
			typ, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			if typ == websocket.MessageText {
				var ctl api.AttachControl
				if json.Unmarshal(data, &ctl) == nil && ctl.Cols > 0 && ctl.Rows > 0 {
					_ = p.Resize(ctl.Cols, ctl.Rows)
				}
				continue
			}
			// A person at a terminal types what they mean: no guard. Keys a
			// busy program does not take are dropped; the session goes on.
			if err := p.Input(data, false); errors.Is(err, pane.ErrExited) {
				return
			}
		}
	}()

	write := func(b []byte) bool {
		wctx, wcancel := context5s(ctx)
		defer wcancel()
		return c.Write(wctx, websocket.MessageBinary, b) == nil
	}
	if !write(initial) {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case b, ok := <-watcher.C:
			if !ok {
				c.Close(websocket.StatusNormalClosure, watcher.Reason())
				return
			}
			if !write(b) {
				return
			}
		}
	}
}
