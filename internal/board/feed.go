package board

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/term"
)

// card is one pane as the page gets it.
type card struct {
	api.Pane
	Screen  [][]term.Run `json:"screen"`
	Answers []string     `json:"answers"`
	Options []option     `json:"options"`
}

// feed holds the latest state: whole, and as the change from the one
// before. Every client sends from there, so a client that is slow to
// read only misses states: one that has the state before gets the
// change, any other the whole state.
type feed struct {
	mu    sync.Mutex
	full  []byte // {"type":"state","panes":[every card]}
	delta []byte // {"type":"delta","panes":[changed cards],"gone":[keys]}
	seq   uint64
	ready chan struct{} // closed and replaced on every new message
}

func newFeed() *feed { return &feed{ready: make(chan struct{})} }

// set publishes a state; a nil delta means nothing changed.
func (f *feed) set(full, delta []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if delta == nil && f.full != nil {
		return
	}
	f.full, f.delta, f.seq = full, delta, f.seq+1
	close(f.ready)
	f.ready = make(chan struct{})
}

// next is what a client that last sent seq sent should send now, if
// anything, the feed's seq, and a channel closed on the next state.
func (f *feed) next(sent uint64) ([]byte, uint64, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.full == nil || f.seq == sent:
		return nil, f.seq, f.ready
	case sent != 0 && f.seq == sent+1 && f.delta != nil:
		return f.delta, f.seq, f.ready
	}
	return f.full, f.seq, f.ready
}

// builder turns the panes into state messages, remembering each card as
// last sent to tell what changed.
type builder struct {
	mu    sync.Mutex
	last  map[string]built // by the card's key
	size  int              // the last whole state's length
	hosts []byte           // the hosts as last sent (JSON; nil outside a fleet)
}

// built is a card as last sent: its JSON, and what it was made from, so
// that an unchanged card is not encoded again (a screen is most of it).
type built struct {
	rest   []byte // the card without its screen, as JSON
	screen [][]term.Run
	json   []byte
}

func sameScreen(a, b [][]term.Run) bool {
	return slices.EqualFunc(a, b, func(x, y []term.Run) bool { return slices.Equal(x, y) })
}

// cardKey names a card across a fleet, as the page does: host:id.
func cardKey(p api.Pane) string { return p.Host + ":" + p.ID }

// publish builds the state and hands it to the feed.
func (s *Server) publish() {
	s.build.mu.Lock()
	defer s.build.mu.Unlock()
	cards := s.cards()
	now := make(map[string]built, len(cards))
	full := append(make([]byte, 0, s.build.size+4096), `{"type":"state","panes":[`...)
	delta := []byte(`{"type":"delta","panes":[`)
	changed := false
	for i, c := range cards {
		key := cardKey(c.Pane)
		scr := c.Screen
		c.Screen = nil
		rest, _ := json.Marshal(c)
		old, ok := s.build.last[key]
		if ok && bytes.Equal(old.rest, rest) && sameScreen(old.screen, scr) {
			old.rest = rest
		} else {
			c.Screen = scr
			b, _ := json.Marshal(c)
			old = built{rest: rest, screen: scr, json: b}
			if changed {
				delta = append(delta, ',')
			}
			delta, changed = append(delta, b...), true
		}
		if i > 0 {
			full = append(full, ',')
		}
		full = append(full, old.json...)
		now[key] = old
	}
	var hosts []byte
	if hl, ok := s.b.(HostLister); ok {
		hosts, _ = json.Marshal(hl.Hosts())
		full = append(append(append(full, `],"hosts":`...), hosts...), '}')
	} else {
		full = append(full, "]}"...)
	}
	hostsChanged := !bytes.Equal(hosts, s.build.hosts)
	s.build.hosts = hosts
	s.build.size = len(full)
	var gone []string
	for key := range s.build.last {
		if _, ok := now[key]; !ok {
			gone = append(gone, key)
		}
	}
	s.build.last = now
	if !changed && len(gone) == 0 && !hostsChanged {
		s.feed.set(full, nil)
		return
	}
	g, _ := json.Marshal(gone)
	if gone == nil {
		g = []byte("[]")
	}
	delta = append(append(delta, `],"gone":`...), g...)
	if hosts != nil {
		delta = append(append(delta, `,"hosts":`...), hosts...)
	}
	delta = append(delta, '}')
	s.feed.set(full, delta)
}

// broadcast builds the board's state once for all clients: after every
// state change, and every half second for the live previews, while any
// client is connected.
func (s *Server) broadcast() {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var changed <-chan struct{}
	stop := func() {}
	defer func() { stop() }()
	for {
		s.mu.Lock()
		n := s.clients
		s.mu.Unlock()
		switch {
		case n > 0 && changed == nil:
			changed, stop = s.b.Changed()
		case n == 0 && changed != nil:
			stop()
			changed, stop = nil, func() {}
		}
		if n > 0 {
			s.publish()
			// A burst of changes is one new state, not one per change.
			select {
			case <-s.closed:
				return
			case <-time.After(MinInterval):
			}
		}
		select {
		case <-s.closed:
			return
		case <-changed:
		case <-tick.C:
		}
	}
}

// cards is every pane as the page gets it.
func (s *Server) cards() []card {
	cards := []card{}
	for _, p := range s.b.Panes() {
		scr, _ := s.b.StyledScreen(p.ID)
		c := card{Pane: p, Screen: scr, Answers: []string{}, Options: []option{}}
		if p.State == "blocked" {
			pr := s.b.Prompt(p.ID)
			if pr.Answers != nil {
				c.Answers = pr.Answers
			}
			if o := options(pr, scr); o != nil {
				c.Options = o
			}
		}
		cards = append(cards, c)
	}
	return cards
}

// wsOrigin says a WebSocket upgrade comes from the board's own page:
// browsers always send Origin with one, and it must be exactly http://
// and the (checked) Host.
func wsOrigin(r *http.Request) bool {
	return r.Header.Get("Origin") == "http://"+r.Host
}

// handleWS sends the latest state to one client whenever there is a new
// one. A client that takes more than WriteTimeout over one message is
// dropped; the others never wait for it.
func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	if !wsOrigin(r) {
		http.Error(w, "cross-origin WebSocket refused", http.StatusForbidden)
		return
	}
	s.mu.Lock()
	full, first := s.clients >= MaxClients, s.clients == 0
	if !full {
		s.clients++
	}
	s.mu.Unlock()
	if full {
		http.Error(w, fmt.Sprintf("the board has %d clients already; close some of its tabs", MaxClients), http.StatusServiceUnavailable)
		return
	}
	defer func() {
		s.mu.Lock()
		s.clients--
		s.mu.Unlock()
	}()
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true}) // the Origin was checked above
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context())
	if first {
		s.publish() // nobody kept it up to date
	}
	// The first message is the whole state, then the changes.
	var sent uint64
	for {
		msg, seq, ready := s.feed.next(sent)
		if msg != nil {
			wctx, cancel := context.WithTimeout(ctx, writeTimeout)
			err := c.Write(wctx, websocket.MessageText, msg)
			cancel()
			if err != nil {
				return
			}
			sent = seq
		}
		select {
		case <-ctx.Done():
			return
		case <-s.closed:
			return
		case <-ready:
		}
	}
}
