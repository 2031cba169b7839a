package pane

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// lockedPane starts script in a pane, waits for "one" on its screen, then
// holds the pane's lock: its reader, once it has read, waits to feed, as a
// daemon starved of the processor does. release lets go (at the test's
// end at the latest).
func lockedPane(t *testing.T, script string) (p *Pane, pending pendingSource, release func()) {
	t.Helper()
	p = startScript(t, script)
	awaitScreen(t, p, "one")
	pending, ok := p.src.(pendingSource)
	if !ok {
		t.Fatalf("a pane on a PTY (%T) cannot say what its program wrote unread", p.src)
	}
	p.mu.Lock()
	release = sync.OnceFunc(p.mu.Unlock)
	t.Cleanup(release)
	return p, pending, release
}

// settlesAfter checks that AwaitSettled does not return while the lock is
// held (early says what it would have settled on), then releases it and
// reports when it did, and the time of the release.
func settlesAfter(t *testing.T, p *Pane, release func(), early string) (released time.Time) {
	t.Helper()
	settled := make(chan bool, 1)
	go func() { settled <- p.AwaitSettled(time.Now(), 10*time.Second) }()
	select {
	case <-settled:
		t.Fatalf("settled %v after the last read with %s", 3*EnterSettle, early)
	case <-time.After(3 * EnterSettle):
	}
	released = time.Now()
	release()
	select {
	case ok := <-settled:
		if !ok {
			t.Fatal("never settled after the output was read and fed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("never settled after the output was read and fed")
	}
	return released
}

// Output the program wrote that the pane has not read yet is not a quiet
// screen: a pane whose reader is held up (here by its lock, as a daemon
// starved of the processor is) does not settle until it has read it.
func TestSettleWaitsForUnreadOutput(t *testing.T) {
	t.Parallel()
	p, pending, release := lockedPane(t, `stty -echo; printf one; read x; printf two; read y; printf three; exec sleep 60`)
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
	released := settlesAfter(t, p, release, "the program's output unread")
	if d := time.Since(released); d < EnterSettle {
		t.Fatalf("settled %v after the output could be read; want at least %v of quiet after it", d, EnterSettle)
	}
	awaitScreen(t, p, "three")
}

// Output the pane has read but not yet fed to its screen is not quiet
// either: settled means the screen shows everything the program wrote.
func TestSettleWaitsForOutputBeingFed(t *testing.T) {
	t.Parallel()
	p, pending, release := lockedPane(t, `stty -echo; printf one; read x; printf DIALOG; exec sleep 60`)
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
	settlesAfter(t, p, release, "the program's output read but not on the screen")
	if text := p.Snapshot().Text(); !strings.Contains(text, "DIALOG") {
		t.Fatalf("settled before the screen showed the output:\n%s", text)
	}
}
