package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/fleet"
)

// Session is a terminal joined to a pane, this host's or another's: the
// screen as it is, then the program's output; keys and sizes the other
// way. An Input error wrapping ErrSessionOver ends the session, one
// wrapping ErrKeysRefused is said once in the terminal; keys a busy
// program does not take are dropped, and the session goes on.
type Session = fleet.AttachSession

// ErrSessionOver is the pane's program gone: its keys have nowhere to go.
var ErrSessionOver = errors.New("the pane's program has ended")

// ErrKeysRefused is keys the session may not type (another host's pane
// watched with an observe-only credential): said once in the terminal,
// and the session goes on. RefuseKeys makes one that says why.
var ErrKeysRefused = errors.New("keys refused")

// RefuseKeys is err, said as it is, that is ErrKeysRefused.
func RefuseKeys(err error) error { return refusedKeys{err} }

type refusedKeys struct{ err error }

func (r refusedKeys) Error() string        { return r.err.Error() }
func (r refusedKeys) Unwrap() error        { return r.err }
func (r refusedKeys) Is(target error) bool { return target == ErrKeysRefused }

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
	serveSession(w, r, sess)
}

// serveSession joins the request's WebSocket to a session, and closes
// the session at the end.
func serveSession(w http.ResponseWriter, r *http.Request, sess Session) {
	defer sess.Close()
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()

	write := func(b []byte) bool {
		wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
		defer wcancel()
		return c.Write(wctx, websocket.MessageBinary, b) == nil
	}
	go func() {
		defer cancel()
		told := false
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
			switch err := sess.Input(data); {
			case errors.Is(err, ErrSessionOver):
				return
			case errors.Is(err, ErrKeysRefused) && !told:
				// Said once, in the terminal: the person sees why the
				// keys do nothing.
				told = true
				write([]byte("\r\n[" + err.Error() + "]\r\n"))
			}
		}
	}()
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
