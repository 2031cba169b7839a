package pane

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
)

// Every call a request makes into a pane answers within a bound, whatever
// holds the pane: its read loop (the lock held), a consumer of its changes
// that does not return, a program that does not read its input.
func stuckPaneAnswersInBoundedTime(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the pane lock and input bounds, about 5 s; go test without -short runs it")
	}
	bound := LockWait + InputWait + time.Second
	for _, tc := range []struct {
		name string
		// hold makes the pane stuck and returns what releases it.
		hold func(t *testing.T, p *Pane, consumer *stuckConsumer) (release func())
	}{
		{"read loop holds the lock", func(t *testing.T, p *Pane, _ *stuckConsumer) func() {
			p.mu.Lock()
			return p.mu.Unlock
		}},
		{"a change consumer does not return", func(t *testing.T, p *Pane, c *stuckConsumer) func() {
			// The consumer has blocked since the first change (to blocked).
			select {
			case <-c.entered:
			case <-time.After(5 * time.Second):
				t.Fatalf("no change was delivered; the pane is %+v", p.Info().Decision)
			}
			return func() {}
		}},
		{"the program does not read its input", func(t *testing.T, p *Pane, _ *stuckConsumer) func() {
			chunk := []byte(strings.Repeat("x", 4096))
			for i := 0; ; i++ {
				if err := p.Input(chunk, false); err != nil {
					break
				}
				if i > 10*InputQueue {
					t.Fatal("the input never filled up")
				}
			}
			return func() {}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each its own pane: the case is the longest of them
			consumer := &stuckConsumer{entered: make(chan struct{}, 1), release: make(chan struct{})}
			consumer.block.Store(strings.Contains(tc.name, "consumer"))
			p, err := Start(Config{ID: "stuck", Argv: []string{"sh", "-c", `stty raw -echo; printf 'Continue? [y/n] '; exec sleep 600`},
				Cols: 80, Rows: 24, Rules: ruleSet(t), OnChange: consumer.onChange, Sweep: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(time.Second)
			defer consumer.free()
			await(t, p, "blocked", inState(combine.Blocked))
			release := tc.hold(t, p, consumer)
			defer release()

			calls := map[string]func() error{
				"send":       func() error { return p.Input([]byte("hello"), true) },
				"send-force": func() error { return p.Input([]byte("hello"), false) },
				"answer":     func() error { _, err := p.Answer("yes"); return err },
				"screen":     func() error { p.Snapshot(); p.MarkSeen(); p.ANSI(); return nil },
				"ls":         func() error { p.Info(); return nil },
				"hook": func() error {
					p.ApplyHook(detect.Hook{State: combine.Blocked, Kind: "permission", Message: "x"})
					return nil
				},
				"attach":      func() error { _, w, err := p.WatchWithin(); w.closeIfAny(); return err },
				"resize":      func() error { return p.Resize(100, 30) },
				"answers":     func() error { p.AnswerNames(); return nil },
				"kill-signal": func() error { return p.Kill(0) },
				"board-rows":  func() error { p.StyledRows(); return nil },
			}
			var mu sync.Mutex
			took := map[string]time.Duration{}
			var wg sync.WaitGroup
			for name, call := range calls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					start := time.Now()
					err := call()
					d := time.Since(start)
					mu.Lock()
					took[name] = d
					mu.Unlock()
					t.Logf("%-11s %6v %v", name, d.Round(time.Millisecond), err)
				}()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(3 * bound):
				mu.Lock()
				defer mu.Unlock()
				var hung []string
				for name := range calls {
					if _, ok := took[name]; !ok {
						hung = append(hung, name)
					}
				}
				t.Fatalf("calls still waiting after %v: %v", 3*bound, hung)
			}
			var longest time.Duration
			for name, d := range took {
				if d > bound {
					t.Errorf("%s took %v (bound %v)", name, d, bound)
				}
				longest = max(longest, d)
			}
			t.Logf("longest call: %v", longest.Round(time.Millisecond))
		})
	}
}

type stuckConsumer struct {
	block   atomic.Bool
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (c *stuckConsumer) free() { c.once.Do(func() { close(c.release) }) }

func (c *stuckConsumer) onChange(p *Pane, _ detect.Change) {
	if !c.block.Load() {
		return
	}
	select {
	case c.entered <- struct{}{}:
	default:
	}
	<-c.release
}

func (w *Watcher) closeIfAny() {
	if w != nil {
		w.Close()
	}
}

// A hook report that comes while the pane is busy is applied once it is
// free, never dropped, and its caller never waits.
func hookWhileBusyIsKept(t *testing.T) {
	p, _ := startFake(t, "claude-code")
	awaitScreen(t, p, "? for shortcuts")
	p.mu.Lock() // busy past LockWait
	start := time.Now()
	p.ApplyHook(detect.Hook{State: combine.Blocked, Kind: "permission", Message: "approve Bash: make"})
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("the hook's caller waited %v", d)
	}
	time.Sleep(LockWait + 200*time.Millisecond) // the pane stays busy past LockWait: the window under test
	p.mu.Unlock()
	in := await(t, p, "blocked by the hook", inState(combine.Blocked))
	if in.Decision.Source != combine.SourceHook || in.Decision.Message != "approve Bash: make" {
		t.Fatalf("after the pane was free: %+v", in.Decision)
	}
}
