package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"github.com/corral-dev/corral/internal/api"
)

// Session is a terminal joined to a pane: the screen as it is, then the
// program's output; keys and sizes the other way.
type Session interface {
	Initial() []byte
	// Output closes when the pane ends the session, saying why (Reason).
	Output() <-chan []byte
	Reason() string
	// Input types keys as a person at a terminal does. An error wrapping
	// ErrSessionOver ends the session; keys a busy program does not take
	// are dropped, and the session goes on.
	Input(b []byte) error
	Resize(cols, rows int) error
	Close()
}

// ErrSessionOver is the pane's program gone: its keys have nowhere to go.
var ErrSessionOver = errors.New("the pane's program has ended")

// attach joins a terminal to a pane over a WebSocket: binary messages to
// the client carry the program's output (first a redraw of the screen as
// it is); binary messages from the client are keys and pastes for the
// program; text messages from the client are JSON control
// (api.AttachControl). Several clients may attach at once.
func (h *handlers) attach(w http.ResponseWriter, r *http.Request) {
	// The session comes first: a busy pane is an answer (503), not a
	// WebSocket that never speaks.
	sess, err := h.svc.Attach(r.PathValue("id"))
	if err != nil {
		WriteError(w, err)
		return
	}
	defer sess.Close()
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
					_ = sess.Resize(ctl.Cols, ctl.Rows)
				}
				continue
			}
			if err := sess.Input(data); errors.Is(err, ErrSessionOver) {
				return
			}
		}
	}()

	write := func(b []byte) bool {
		wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
		defer wcancel()
		return c.Write(wctx, websocket.MessageBinary, b) == nil
	}
	if !write(sess.Initial()) {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case b, ok := <-sess.Output():
			if !ok {
				c.Close(websocket.StatusNormalClosure, sess.Reason())
				return
			}
			if !write(b) {
				return
			}
		}
	}
}
