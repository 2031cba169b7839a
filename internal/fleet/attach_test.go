package fleet

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"
)

// echoSession is a terminal that echoes its keys, as a shell does.
type echoSession struct {
	out  chan []byte
	once sync.Once
}

func (e *echoSession) Initial() []byte             { return []byte("$ ") }
func (e *echoSession) Output() <-chan []byte       { return e.out }
func (e *echoSession) Reason() string              { return "the pane exited" }
func (e *echoSession) Resize(cols, rows int) error { return nil }
func (e *echoSession) Close()                      { e.once.Do(func() { close(e.out) }) }
func (e *echoSession) Input(b []byte) error {
	select {
	case e.out <- append([]byte(nil), b...):
	default:
	}
	return nil
}

// attachLocal is a daemon whose panes echo.
type attachLocal struct {
	*fakeLocal
	mu       sync.Mutex
	sessions []*echoSession
}

func (l *attachLocal) Attach(ref string) (AttachSession, error) {
	if _, ok := l.Pane(ref); !ok {
		return nil, errors.New("no pane " + ref)
	}
	s := &echoSession{out: make(chan []byte, 64)}
	l.mu.Lock()
	l.sessions = append(l.sessions, s)
	l.mu.Unlock()
	return s, nil
}

func attachAcrossHosts(t *testing.T) {
	f := startFleet(t, "127.0.0.1:0")
	target := &attachLocal{fakeLocal: newFakeLocal("p1")}
	f.join("t", target, 0)
	caller := f.join("c", newFakeLocal(), 0)
	waitFor(t, 5*time.Second, "t reachable from c", func() bool { r, _ := hostReachable(caller, "t"); return r })
	if _, err := caller.Attach(context.Background(), "t", "nosuch"); err == nil {
		t.Fatal("attached to a pane that does not exist")
	}
	a, err := caller.Attach(context.Background(), "t", "p1")
	if err != nil {
		t.Fatal(err)
	}
	if string(a.Initial) != "$ " {
		t.Fatalf("initial: %q", a.Initial)
	}
	// Keystroke → echo, against the connection's round trip, measured
	// now (loopback, a loaded machine: both alike).
	var lat, rtts []time.Duration
	for i := 0; i < 40; i++ {
		key := []byte{'a' + byte(i%26)}
		start := time.Now()
		if err := a.Input(context.Background(), key); err != nil {
			t.Fatal(err)
		}
		select {
		case b := <-a.Output():
			if string(b) != string(key) {
				t.Fatalf("echo %q, want %q", b, key)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no echo")
		}
		lat = append(lat, time.Since(start))
		rtt, err := caller.nc.RTT()
		if err != nil {
			t.Fatal(err)
		}
		rtts = append(rtts, rtt)
	}
	med := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	// One round trip to the server is half the way between two hosts
	// through it: a host-to-host round trip is two of them.
	echo, rtt := med(lat), med(rtts)
	t.Logf("keystroke → echo: median %v; client ↔ server round trip: median %v (host ↔ host: %v); ratio %.2f", echo, rtt, 2*rtt, float64(echo)/float64(2*rtt))
	if echo > 2*(2*rtt)+5*time.Millisecond {
		t.Errorf("keystroke → echo %v, over twice the host-to-host round trip %v", echo, 2*rtt)
	}
	a.Close()
	waitFor(t, 5*time.Second, "the session closed on t", func() bool {
		target.mu.Lock()
		defer target.mu.Unlock()
		s := target.sessions[len(target.sessions)-1]
		select {
		case _, ok := <-s.out:
			return !ok
		default:
			return false
		}
	})
	// An observe-only host watches, but may not type.
	otok, _ := f.hub.Invite("o", false, 0)
	o, err := Join(context.Background(), MemberOptions{Name: "o", URLs: []string{f.hub.URL()}, Token: otok, Local: newFakeLocal(), Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close(false)
	ro, err := o.Attach(context.Background(), "t", "p1")
	if err != nil {
		t.Fatalf("an observe-only host cannot watch: %v", err)
	}
	defer ro.Close()
	if err := ro.Input(context.Background(), []byte("x")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("an observe-only host typed: %v", err)
	}
	target.mu.Lock()
	s := target.sessions[len(target.sessions)-1]
	target.mu.Unlock()
	_ = s.Input([]byte("out"))
	select {
	case b := <-ro.Output():
		if string(b) != "out" {
			t.Fatalf("read-only output %q", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the observe-only host sees nothing")
	}
}
