package board

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/corral-dev/corral/internal/api"
)

// manyBackend has n panes whose states the test changes.
type manyBackend struct {
	fakeBackend
	mu      sync.Mutex
	panes   []api.Pane
	changed chan struct{}
}

func (m *manyBackend) Panes() []api.Pane {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]api.Pane(nil), m.panes...)
}

func (m *manyBackend) Changed() (<-chan struct{}, func()) { return m.changed, func() {} }

func (m *manyBackend) set(f func([]api.Pane) []api.Pane) {
	m.mu.Lock()
	m.panes = f(m.panes)
	m.mu.Unlock()
	m.changed <- struct{}{}
}

type stateMsg struct {
	Type  string     `json:"type"`
	Panes []api.Pane `json:"panes"`
	Gone  []string   `json:"gone"`
}

// A client gets the whole state first, then only what changed: the panes
// whose cards differ and the keys of the panes gone.
func TestStateThenChanges(t *testing.T) {
	mb := &manyBackend{changed: make(chan struct{}, 1)}
	for i := range 1000 {
		mb.panes = append(mb.panes, api.Pane{ID: fmt.Sprintf("p%d", i), State: "working"})
	}
	s, err := Start("127.0.0.1:0", false, mb)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, base := signIn(t, s)
	hdr := cookieHeader(c, base)
	hdr.Set("Origin", "http://"+s.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+s.Addr+s.base+"ws", &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(-1)
	read := func() (stateMsg, int) {
		t.Helper()
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m stateMsg
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%v: %.200s", err, b)
		}
		return m, len(b)
	}
	first, fullSize := read()
	if first.Type != "state" || len(first.Panes) != 1000 {
		t.Fatalf("first message: %s with %d panes", first.Type, len(first.Panes))
	}
	mb.set(func(ps []api.Pane) []api.Pane { ps[500].State = "blocked"; return ps })
	d, size := read()
	if d.Type != "delta" || len(d.Panes) != 1 || d.Panes[0].ID != "p500" || d.Panes[0].State != "blocked" || len(d.Gone) != 0 {
		t.Fatalf("after one change: %+v", d)
	}
	if size*50 > fullSize {
		t.Errorf("a change of one pane is %d bytes; the whole state %d", size, fullSize)
	}
	mb.set(func(ps []api.Pane) []api.Pane { return append(ps[:10], ps[11:]...) })
	d, _ = read()
	if d.Type != "delta" || len(d.Panes) != 0 || len(d.Gone) != 1 || d.Gone[0] != ":p10" {
		t.Fatalf("after a pane went: %+v", d)
	}
	// A second client starts from the whole state as it is now.
	ws2, _, err := websocket.Dial(ctx, "ws://"+s.Addr+s.base+"ws", &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatal(err)
	}
	defer ws2.CloseNow()
	ws2.SetReadLimit(-1)
	_, b, err := ws2.Read(ctx)
	var m stateMsg
	if err != nil || json.Unmarshal(b, &m) != nil || m.Type != "state" || len(m.Panes) != 999 {
		t.Fatalf("a new client's first message: %s %d panes %v", m.Type, len(m.Panes), err)
	}
}

// What a client is sent depends on what it sent last: nothing when it
// is current, the change when it is one state behind, else the whole.
func TestFeedNext(t *testing.T) {
	f := newFeed()
	if msg, _, _ := f.next(0); msg != nil {
		t.Fatalf("an empty feed sends %q", msg)
	}
	f.set([]byte("full1"), nil) // the first state: nothing to change from
	f.set([]byte("full2"), []byte("delta2"))
	f.set([]byte("full2"), nil) // nothing changed: no new state
	for _, c := range []struct {
		sent uint64
		want string
	}{
		{0, "full2"},  // a new client
		{1, "delta2"}, // one behind
		{2, ""},       // current
	} {
		msg, seq, _ := f.next(c.sent)
		if string(msg) != c.want || seq != 2 {
			t.Errorf("after %d: %q at %d, want %q at 2", c.sent, msg, seq, c.want)
		}
	}
	f.set([]byte("full3"), []byte("delta3"))
	if msg, _, _ := f.next(1); string(msg) != "full3" {
		t.Errorf("two behind: %q, want the whole state", msg)
	}
}
