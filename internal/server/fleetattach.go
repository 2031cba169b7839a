package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sync"

	"github.com/coder/websocket"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/fleet"
	"github.com/corral-dev/corral/internal/httpapi"
)

// Attaching across the fleet: this daemon's panes as another host's
// member sees them (fleetLocal.Attach), and a terminal here joined to
// another host's pane (fleetAttach), with the keys and the control
// messages of a local attach.

func (l fleetLocal) Attach(ref string) (fleet.AttachSession, error) {
	f, err := l.s.find(ref)
	if err != nil {
		return nil, err
	}
	if f.job != nil {
		return nil, errors.New("a headless job has no terminal to attach to; follow it with corral events HOST:ID --follow")
	}
	sess, err := l.s.Attach(ref)
	if err != nil {
		return nil, err
	}
	return sess, nil
}

var attachPath = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^/v1/panes/([^/?]+)/attach$`) })

// fleetAttach joins the WebSocket of a local attach to another host's
// pane; false when rest is no attach request.
func (s *Server) fleetAttach(w http.ResponseWriter, r *http.Request, m *fleet.Member, host, rest string) bool {
	sm := attachPath().FindStringSubmatch(rest)
	if sm == nil {
		return false
	}
	ref, err := url.PathUnescape(sm[1])
	if err != nil {
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", err)
		return true
	}
	ra, err := m.Attach(r.Context(), host, ref)
	if err != nil {
		code, status := "unreachable", http.StatusBadGateway
		switch {
		case errors.Is(err, fleet.ErrNoHost):
			code = "not_found"
		case errors.Is(err, fleet.ErrHubUnreachable):
			status, code = http.StatusServiceUnavailable, "hub_unreachable"
		}
		httpapi.Fail(w, status, code, fmt.Errorf("attach %s:%s: %w", host, ref, err))
		return true
	}
	defer ra.Close()
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return true
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	write := func(b []byte) bool {
		wctx, wcancel := context5s(ctx)
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
					ra.Resize(ctx, ctl.Cols, ctl.Rows)
				}
				continue
			}
			if err := ra.Input(ctx, data); errors.Is(err, fleet.ErrReadOnly) && !told {
				told = true
				write([]byte("\r\n[" + err.Error() + "]\r\n"))
			}
		}
	}()
	if !write(ra.Initial) {
		return true
	}
	for {
		select {
		case <-ctx.Done():
			return true
		case b, ok := <-ra.Output():
			if !ok {
				c.Close(websocket.StatusNormalClosure, ra.Reason())
				return true
			}
			if !write(b) {
				return true
			}
		}
	}
}
