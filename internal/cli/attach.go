package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/coder/websocket"
	"github.com/spf13/pflag"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/tty"
)

// parseDetachKey reads "^\", "^]", "ctrl-q" and the like.
func parseDetachKey(s string) (byte, error) {
	k := strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(s, "ctrl-"), "^"))
	if len(k) == 1 && (k[0] >= '@' && k[0] <= '_' || k[0] >= 'a' && k[0] <= 'z') {
		return strings.ToUpper(k)[0] & 0x1f, nil
	}
	return 0, usagef("--detach-key %q: use a control key like ^\\ or ctrl-q", s)
}

func runAttach(fs *pflag.FlagSet) runFunc {
	keyName := fs.String("detach-key", `^\`, "the key that detaches")
	return func(ctx context.Context, std IO, pos []string) error {
		if len(pos) != 1 {
			return usagef("need one pane id or name")
		}
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		pos = localRefs(ctx, c, pos)
		// Another host's pane (HOST:ID) is attached through the fleet.
		host, _, remote := strings.Cut(pos[0], ":")
		detach, err := parseDetachKey(*keyName)
		if err != nil {
			return err
		}
		var p api.Pane
		// Another host's pane is looked up in the fleet's view first: an
		// observe-only host may watch it but not ask its host about it.
		if !remote || !viewedPane(ctx, c, pos[0], &p) {
			if err := c.Do(ctx, "GET", panePath(pos[0], ""), nil, &p); err != nil {
				return apiError(err)
			}
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		// The daemon must answer the handshake in time; the session then lasts.
		dctx, dcancel := context.WithTimeout(ctx, c.Timeout)
		path := panePath(p.ID, "attach")
		if remote {
			path = client.FleetPath(panePath(host+":"+p.ID, "attach"))
		}
		ws, resp, err := websocket.Dial(dctx, "ws://corral"+path, &websocket.DialOptions{HTTPClient: c.HTTPClient()})
		timedOut := dctx.Err() == context.DeadlineExceeded
		dcancel()
		if err != nil {
			switch {
			case timedOut:
				return fmt.Errorf("attach %s: %w within %v", pos[0], client.ErrNoAnswer, c.Timeout)
			case resp != nil && resp.StatusCode/100 != 1 && resp.Body != nil:
				var e api.Error
				if json.NewDecoder(resp.Body).Decode(&e) == nil && e.Error != "" {
					return fmt.Errorf("attach %s: %s", pos[0], e.Error)
				}
			}
			return fmt.Errorf("attach %s: %w", pos[0], err)
		}
		defer ws.CloseNow()
		ws.SetReadLimit(4 << 20)

		in := int(os.Stdin.Fd())
		if tty.IsTerminal(in) {
			restore := tty.Raw(in)
			defer restore()
			sendSize := func() {
				if cols, rows, ok := tty.Size(in); ok {
					b, _ := json.Marshal(api.AttachControl{Cols: cols, Rows: rows})
					_ = ws.Write(ctx, websocket.MessageText, b)
				}
			}
			sendSize()
			winch := make(chan os.Signal, 1)
			signal.Notify(winch, syscall.SIGWINCH)
			defer signal.Stop(winch)
			go func() {
				for {
					select {
					case <-ctx.Done():
						return
					case <-winch:
						sendSize()
					}
				}
			}()
		}

		ended := make(chan string, 2)
		go func() { // keys → pane, until the detach key
			buf := make([]byte, 4096)
			for {
				n, err := std.Stdin.Read(buf)
				chunk := buf[:n]
				if i := indexByte(chunk, detach); i >= 0 {
					if i > 0 {
						_ = ws.Write(ctx, websocket.MessageBinary, chunk[:i])
					}
					ended <- "detached"
					return
				}
				if n > 0 && ws.Write(ctx, websocket.MessageBinary, append([]byte(nil), chunk...)) != nil {
					ended <- "the connection closed"
					return
				}
				if err != nil {
					ended <- "input ended"
					return
				}
			}
		}()
		go func() { // output → terminal
			for {
				_, data, err := ws.Read(ctx)
				if err != nil {
					reason := "the connection closed"
					if cs := websocket.CloseStatus(err); cs == websocket.StatusNormalClosure {
						reason = "the pane ended the session"
					}
					ended <- reason
					return
				}
				_, _ = std.Stdout.Write(data)
			}
		}()
		reason := <-ended
		ws.Close(websocket.StatusNormalClosure, "detached")
		fmt.Fprintf(std.Stderr, "\r\n[%s from %s]\r\n", reason, pos[0])
		return nil
	}
}

// viewedPane finds HOST:REF (an id or a name) among the panes of the
// fleet's view.
func viewedPane(ctx context.Context, c *client.Client, ref string, p *api.Pane) bool {
	host, id, _ := strings.Cut(ref, ":")
	var panes []api.Pane
	if c.Do(ctx, "GET", "/v1/fleet/panes?host="+url.QueryEscape(host), nil, &panes) != nil {
		return false
	}
	for _, q := range panes {
		if q.Host == host && (q.ID == id || q.Name != "" && q.Name == id) {
			*p = q
			return true
		}
	}
	return false
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}
