package pane

import (
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/proctest"
)

// memSource is an outside terminal in memory: it records what the pane
// types and asks of it.
type memSource struct {
	mu         sync.Mutex
	typed      []byte
	signals    []syscall.Signal
	closed     int
	cols, rows int
}

func (s *memSource) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.typed = append(s.typed, b...)
	return len(b), nil
}
func (s *memSource) Size() (int, int, error)  { return s.cols, s.rows, nil }
func (s *memSource) SetSize(int, int) error   { return ErrFixedSize }
func (s *memSource) Foreground() (int, error) { return 0, errors.New("none") }
func (s *memSource) Unread() (int, error)     { return 0, errors.New("cannot say") }
func (s *memSource) Kind() string             { return "mem" }
func (s *memSource) Signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signals = append(s.signals, sig)
	return nil
}
func (s *memSource) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed++
	return nil
}

func (s *memSource) got() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.typed)
}

const fakePrompt = "\x1b[H\x1b[2J" + "────────────────────────────────────────\r\nDo you want to run ls?\r\n1. Yes\r\n2. No\r\n"

func waitState(t *testing.T, p *Pane, want combine.State) {
	t.Helper()
	await(t, p, "state "+string(want), inState(want))
}

// A pane of an outside terminal: its first screen is the terminal's as it
// was, its output arrives through the feed, answers are typed into the
// source, and its end is the source's word, not a signal of corral's.
func TestOutsidePane(t *testing.T) {
	t.Parallel()
	src := &memSource{cols: 60, rows: 12}
	rec := &recorder{}
	p, feed, err := Open(Config{ID: "o1", Rules: ruleSet(t), Agent: "fake", OnChange: rec.add, Sweep: 100 * time.Millisecond},
		src, 0, []byte("\x1b[H\x1b[2Jhello from before\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if in := p.Info(); in.Cols != 60 || in.Rows != 12 {
		t.Fatalf("size %dx%d, want the source's 60x12", in.Cols, in.Rows)
	}
	if got := p.Snapshot().Lines[0]; !strings.Contains(got, "hello from before") {
		t.Fatalf("first row %q, want the terminal's contents", got)
	}
	if err := p.Resize(100, 30); !errors.Is(err, ErrFixedSize) {
		t.Fatalf("Resize: %v, want ErrFixedSize", err)
	}
	// tmux answers its panes' queries: corral must not answer them again.
	feed.Output([]byte("\x1b[c\x1b[6n\x1b[>0q"))
	feed.Output([]byte(fakePrompt))
	waitState(t, p, combine.Blocked)
	if err := p.Input([]byte("x"), true); !errors.Is(err, ErrBlocked) {
		t.Fatalf("guarded input while blocked: %v", err)
	}
	keys, err := p.Answer("yes")
	if err != nil || keys != "1" {
		t.Fatalf("answer: %q, %v", keys, err)
	}
	proctest.WaitFor(2*time.Second, func() bool { return src.got() == "1" })
	if got := src.got(); got != "1" {
		t.Fatalf("typed %q, want the manifest's %q", got, "1")
	}
	feed.Resized(70, 14)
	if in := p.Info(); in.Cols != 70 || in.Rows != 14 {
		t.Fatalf("after Resized: %dx%d", in.Cols, in.Rows)
	}
	if err := p.Kill(syscall.SIGTERM); err != nil || len(src.signals) != 1 {
		t.Fatalf("kill: %v, signals %v", err, src.signals)
	}
	feed.Ended(ExitUnknown)
	select {
	case <-p.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the pane did not end")
	}
	if in := p.Info(); !in.Exited || in.ExitCode != ExitUnknown || in.Decision.State != combine.Exited {
		t.Fatalf("after the end: %+v", in)
	}
	feed.Output([]byte("late")) // ignored, no panic
	feed.Ended(0)               // once only
	if p.Detach() {
		t.Fatal("an ended pane was detached")
	}
}

// Closing a daemon lets go of an outside pane: nothing is signalled, no
// exit is recorded, Done closes.
func TestOutsidePaneCloseLetsGo(t *testing.T) {
	t.Parallel()
	src := &memSource{cols: 40, rows: 10}
	rec := &recorder{}
	p, feed, err := Open(Config{ID: "o2", Rules: ruleSet(t), OnChange: rec.add}, src, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Close(time.Second)
	select {
	case <-p.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not let go")
	}
	if len(src.signals) != 0 || src.closed != 1 {
		t.Fatalf("signals %v, closed %d: want none and 1", src.signals, src.closed)
	}
	if p.Info().Exited {
		t.Fatal("a pane let go was recorded as exited")
	}
	feed.Ended(0) // after the let-go: nothing happens
	if strings.Contains(rec.states(), "exited") {
		t.Fatalf("states %s: an exit after the let-go", rec.states())
	}
}
