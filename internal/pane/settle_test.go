package pane

import (
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// Output the program wrote that the pane has not read yet is not a quiet
// screen: a pane whose reader is held up (here by its lock, as a daemon
// starved of the processor is) does not settle until it has read it.
func TestSettleWaitsForUnreadOutput(t *testing.T) {
	t.Parallel()
	p := startScript(t, `stty -echo; printf one; read x; printf two; read y; printf three; exec sleep 60`)
	awaitScreen(t, p, "one")
	pending, ok := p.src.(pendingSource)
	if !ok {
		t.Fatalf("a pane on a PTY (%T) cannot say what its program wrote unread", p.src)
	}
	p.mu.Lock()
	locked := true
	defer func() {
		if locked {
			p.mu.Unlock()
		}
	}()
	// "two" is read, and its feed waits for the lock: the reader reads no
	// more until it has fed it.
	before := p.outputAt.Load()
	if _, err := p.src.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	if !proctest.WaitFor(5*time.Second, func() bool { return p.outputAt.Load() != before }) {
		t.Fatal(`the pane never read "two"`)
	}
	// "three" waits in the kernel.
	if _, err := p.src.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	if !proctest.WaitFor(5*time.Second, func() bool { n, err := pending.Pending(); return err == nil && n > 0 }) {
		n, err := pending.Pending()
		t.Fatalf(`"three" never waited unread: %d bytes, %v`, n, err)
	}
	settled := make(chan bool, 1)
	go func() { settled <- p.AwaitSettled(time.Now(), 10*time.Second) }()
	select {
	case <-settled:
		t.Fatalf("settled %v after the last read with the program's output unread", 3*EnterSettle)
	case <-time.After(3 * EnterSettle):
	}
	released := time.Now()
	p.mu.Unlock()
	locked = false
	select {
	case ok := <-settled:
		if !ok {
			t.Fatal("never settled after the output was read")
		}
		if d := time.Since(released); d < EnterSettle {
			t.Fatalf("settled %v after the output could be read; want at least %v of quiet after it", d, EnterSettle)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("never settled after the output was read")
	}
	awaitScreen(t, p, "three")
}

// Output the pane has read but not yet fed to its screen is not quiet
// either: settled means the screen shows everything the program wrote.
func TestSettleWaitsForOutputBeingFed(t *testing.T) {
	t.Parallel()
	p := startScript(t, `stty -echo; printf one; read x; printf DIALOG; exec sleep 60`)
	awaitScreen(t, p, "one")
	pending, ok := p.src.(pendingSource)
	if !ok {
		t.Fatalf("a pane on a PTY (%T) cannot say what its program wrote unread", p.src)
	}
	p.mu.Lock()
	locked := true
	defer func() {
		if locked {
			p.mu.Unlock()
		}
	}()
	before := p.outputAt.Load()
	if _, err := p.src.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	// "DIALOG" is read (out of the kernel) and its feed waits for the lock.
	if !proctest.WaitFor(5*time.Second, func() bool {
		n, err := pending.Pending()
		return p.outputAt.Load() != before && err == nil && n == 0
	}) {
		t.Fatal(`the pane never read "DIALOG"`)
	}
	settled := make(chan bool, 1)
	go func() { settled <- p.AwaitSettled(time.Now(), 10*time.Second) }()
	select {
	case <-settled:
		t.Fatalf("settled with the program's output read but not on the screen")
	case <-time.After(3 * EnterSettle):
	}
	p.mu.Unlock()
	locked = false
	select {
	case ok := <-settled:
		if !ok {
			t.Fatal("never settled after the output was fed")
		}
		if text := p.Snapshot().Text(); !strings.Contains(text, "DIALOG") {
			t.Fatalf("settled before the screen showed the output:\n%s", text)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("never settled after the output was fed")
	}
}
