package fleetlink

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/board"
	"github.com/corral-dev/corral/internal/term"
)

// fleetBoard is the web board's backend: this daemon's panes and, in a
// fleet, every other host's, named HOST:ID. Actions on another host's
// pane go through the fleet with that host's guards. Screens of other
// hosts' panes are fetched on demand while their host is reachable, at
// most every remoteScreenEvery each: a working or blocked pane's each
// time, another's when its record changed or every remoteScreenIdleEvery
// (an ended pane's only when its record changed); each card says when its
// screen was fetched.
type fleetBoard struct {
	local board.Backend
	l     *Link
}

// BoardBackend is the web board's backend: local's panes (this daemon's)
// and, in a fleet, every other host's; it lists the fleet's hosts
// (board.HostLister).
func (l *Link) BoardBackend(local board.Backend) board.Backend {
	return fleetBoard{local: local, l: l}
}

// remoteScreenEvery bounds how often one remote pane's screen is fetched;
// remoteScreenIdleEvery is how often a pane neither working nor blocked
// has it fetched while its record stays the same (its screen may change
// all the same: a program printing without a change of state).
const (
	remoteScreenEvery     = 2 * time.Second
	remoteScreenIdleEvery = 10 * time.Second
)

// remote splits HOST:ID; ok is false for this daemon's own panes.
func (b fleetBoard) remote(id string) (host, local string, ok bool) {
	host, local, ok = strings.Cut(id, ":")
	if !ok {
		return "", id, false
	}
	if n := b.l.node.Load(); n != nil && host == n.cfg.Name {
		return "", local, false
	}
	return host, local, true
}

func (b fleetBoard) Panes() []api.Pane {
	local := b.local.Panes()
	n := b.l.node.Load()
	if n == nil {
		return local
	}
	m := n.member.Load()
	for i := range local {
		local[i].Host = n.cfg.Name
	}
	if m == nil {
		return local
	}
	reach := map[string]bool{}
	for _, h := range m.Hosts() {
		reach[h.Host] = h.Reachable
	}
	out := local
	for _, rec := range m.Panes() {
		if rec.Host == n.cfg.Name {
			continue
		}
		p := rec.Pane
		p.ID, p.Host, p.Unreachable = rec.Host+":"+rec.ID, rec.Host, !reach[rec.Host]
		if v, ok := n.screens.Load(p.ID); ok {
			c := v.(*cachedScreen)
			c.mu.Lock()
			if !c.got.IsZero() {
				p.ScreenAt = c.got.UTC().Format(time.RFC3339Nano)
			}
			c.mu.Unlock()
		}
		out = append(out, p)
	}
	return out
}

// Hosts are every host of the fleet, one with no pane too.
func (b fleetBoard) Hosts() []board.Host {
	n := b.l.node.Load()
	if n == nil {
		return nil
	}
	m := n.member.Load()
	if m == nil {
		return []board.Host{{Host: n.cfg.Name, Reachable: true}}
	}
	out := []board.Host{}
	for _, h := range m.Hosts() {
		out = append(out, board.Host{Host: h.Host, Reachable: h.Reachable || h.Host == n.cfg.Name})
	}
	return out
}

// cachedScreen is one remote pane's screen. mu guards every field; it is
// held by StyledScreen while it decides to fetch, and by the fetch's
// goroutine while it stores the answer, never across the request.
type cachedScreen struct {
	mu      sync.Mutex
	rows    [][]term.Run
	fetched time.Time // the last try
	got     time.Time // the last screen received: rows's age
	busy    bool
	// sent is the pane record's time at the last fetch: a newer record
	// asks for the screen again.
	sent time.Time
}

func (b fleetBoard) StyledScreen(id string) ([][]term.Run, error) {
	host, local, ok := b.remote(id)
	if !ok {
		return b.local.StyledScreen(local)
	}
	n := b.l.node.Load()
	if n == nil {
		return nil, nil
	}
	m := n.member.Load()
	if m == nil {
		return nil, nil
	}
	rec, found := m.PaneOf(host, local)
	if !found {
		n.screens.Delete(id) // a pane gone from the fleet takes its screen along
		return nil, nil
	}
	v, _ := n.screens.LoadOrStore(id, &cachedScreen{})
	c := v.(*cachedScreen)
	c.mu.Lock()
	defer c.mu.Unlock()
	ended := rec.State == "exited" || rec.State == "lost"
	live := rec.State == "blocked" || rec.State == "working" || !rec.Sent.Equal(c.sent) ||
		(!ended && time.Since(c.fetched) > remoteScreenIdleEvery)
	if live && !c.busy && time.Since(c.fetched) > remoteScreenEvery && m.HostReachable(host) {
		c.busy = true
		sent := rec.Sent
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			status, body, err := m.Request(ctx, host, "GET", "/v1/panes/"+url.PathEscape(local)+"/screen", nil)
			var scr api.Screen
			if err == nil && status == http.StatusOK {
				err = json.Unmarshal(body, &scr)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			c.busy, c.fetched = false, time.Now()
			if err == nil && status == http.StatusOK {
				c.got, c.sent = c.fetched, sent
				c.rows = make([][]term.Run, len(scr.Lines))
				for i, l := range scr.Lines {
					c.rows[i] = []term.Run{{Text: l}}
				}
			}
		}()
	}
	return c.rows, nil
}

// remoteCall sends a pane action to another host and returns its body.
func (b fleetBoard) remoteCall(host, local, action string, body any) ([]byte, error) {
	n := b.l.node.Load()
	if n == nil || n.member.Load() == nil {
		return nil, fmt.Errorf("this host is not connected to its fleet")
	}
	in, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	status, out, err := n.member.Load().Request(ctx, host, "POST", "/v1/panes/"+url.PathEscape(local)+"/"+action, in)
	if err != nil {
		return nil, err
	}
	if status/100 != 2 {
		var e api.Error
		if json.Unmarshal(out, &e) == nil && e.Error != "" {
			return nil, fmt.Errorf("%s: %s", host, e.Error)
		}
		return nil, fmt.Errorf("host %s answered %d", host, status)
	}
	return out, nil
}

func (b fleetBoard) Answer(id, choice string) (string, error) {
	host, local, ok := b.remote(id)
	if !ok {
		return b.local.Answer(local, choice)
	}
	out, err := b.remoteCall(host, local, "answer", api.AnswerRequest{Choice: choice})
	if err != nil {
		return "", err
	}
	var r api.AnswerResult
	_ = json.Unmarshal(out, &r)
	return r.Keys, nil
}

func (b fleetBoard) Send(id, text string, enter bool) error {
	host, local, ok := b.remote(id)
	if !ok {
		return b.local.Send(local, text, enter)
	}
	_, err := b.remoteCall(host, local, "send", api.SendRequest{Text: text, Enter: enter})
	return err
}

func (b fleetBoard) Kill(id string) error {
	host, local, ok := b.remote(id)
	if !ok {
		return b.local.Kill(local)
	}
	_, err := b.remoteCall(host, local, "kill", api.KillRequest{})
	return err
}

// Prompt of another host's pane offers the usual answers: that host's
// manifest decides what each types.
func (b fleetBoard) Prompt(id string) board.Prompt {
	if _, local, ok := b.remote(id); !ok {
		return b.local.Prompt(local)
	}
	return board.Prompt{Answers: []string{"yes", "always", "no", "cancel"}}
}

// Changed also fires on the fleet's changes.
func (b fleetBoard) Changed() (<-chan struct{}, func()) {
	ch, stop := b.local.Changed()
	out := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		last := ""
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			fire := false
			select {
			case <-done:
				return
			case <-ch:
				fire = true
			case <-t.C:
				// Other hosts' changes arrive in the fleet's view.
				if n := b.l.node.Load(); n != nil {
					if m := n.member.Load(); m != nil {
						var d strings.Builder
						for _, p := range m.Panes() {
							fmt.Fprintf(&d, "%s:%s %s/%s %s %s\n", p.Host, p.ID, p.State, p.Kind, p.Since, p.Message)
						}
						for _, h := range m.Hosts() {
							fmt.Fprintf(&d, "%s %v\n", h.Host, h.Reachable)
						}
						fire = d.String() != last
						last = d.String()
					}
				}
			}
			if fire {
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	var once sync.Once
	return out, func() { once.Do(func() { close(done); stop() }) }
}
