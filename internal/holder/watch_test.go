package holder

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// A held pane costs its holder no goroutine while nothing happens: its
// socket and its daemon's connection wait in the process's one poller.
// Requests still come through (a signal, then done), on every pane at
// once, and a second daemon takes a pane over from the first.
func TestHeldPanesCostNoGoroutine(t *testing.T) {
	const n = 24
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	if _, err := thePoller(); err != nil { // started once a process, not counted
		t.Fatal(err)
	}
	exits := newExitWatch()
	base := runtime.NumGoroutine()
	hs := make([]*holder, n)
	cs := make([]*Conn, n)
	for i := range hs {
		h, err := start(paneConfig(dir, fmt.Sprintf("g%d", i), "exec sleep 1052"), t.Logf, nil, nil, exits)
		if err != nil {
			t.Fatal(err)
		}
		hs[i] = h
		defer h.end()
		if cs[i], err = Dial(h.cfg.Socket, h.cfg.Secret, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		defer cs[i].Close()
	}
	// The proofs' goroutines end once each connection is the daemon's.
	var got int
	if !proctest.WaitFor(10*time.Second, func() bool { got = runtime.NumGoroutine() - base; return got <= 2 }) {
		t.Fatalf("%d held panes cost their holder %d goroutines, want none (at most 2 for the process)", n, got)
	}
	// Another daemon takes the first pane over; the first one's
	// connection is closed.
	c2, err := Dial(hs[0].cfg.Socket, hs[0].cfg.Secret, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cs[0].SetDeadline(time.Now().Add(10 * time.Second))
	for {
		m, err := cs[0].Next()
		if err != nil {
			break // closed by the holder
		}
		if !m.Live {
			t.Fatalf("the first daemon's connection got %+v after a second took the pane", m)
		}
	}
	cs[0].Close()
	cs[0] = c2
	for _, c := range cs {
		if err := c.Kill(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cs {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		for {
			m, err := c.Next()
			if err != nil {
				t.Fatalf("pane %d: waiting for the exit: %v", i, err)
			}
			if m.Exit {
				break
			}
		}
		if err := c.Collect(); err != nil {
			t.Fatal(err)
		}
	}
	for i, h := range hs {
		select {
		case <-h.finished:
		case <-time.After(10 * time.Second):
			t.Fatalf("pane %d not finished after its daemon collected it", i)
		}
	}
}
