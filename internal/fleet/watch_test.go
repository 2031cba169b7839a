package fleet

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A watcher is made by the first attempt that answers: one never
// answered (a request dropped while a cluster elects its leaders) does
// not hold it up, and is stopped once it answers; a failed attempt is
// said at once; the watchdog's restart ends the wait.
func newWatcherTest(t *testing.T) {
	type attempt struct {
		ctx     context.Context
		release chan struct{} // closed: the attempt answers
		fail    bool
	}
	for _, tc := range []struct {
		name     string
		answers  []bool // per attempt: answers at once (true) or only when released
		fail     bool   // the first attempt fails at once
		restart  bool   // the watchdog asks for a new watcher while none answered
		want     int    // the attempt whose watcher is taken (1-based); 0: none
		wantErr  error
		atLeast  time.Duration
		atMost   time.Duration
		released int // attempts released after the return, whose watchers must then stop
	}{
		{name: "the first answers", answers: []bool{true}, want: 1, atMost: createRetry / 2},
		{name: "the first never answers", answers: []bool{false, true}, want: 2, atLeast: createRetry, atMost: 2 * createRetry, released: 1},
		{name: "the first fails", answers: []bool{true}, fail: true, atMost: createRetry / 2},
		{name: "restarted meanwhile", answers: []bool{false, false, false}, restart: true, wantErr: errRewatch, atMost: createRetry / 2, released: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Member{}
			m.ctx, m.cancel = context.WithCancel(context.Background())
			defer m.cancel()
			var mu sync.Mutex
			var attempts []*attempt
			mk := func(ctx context.Context) (<-chan jetstream.KeyValueEntry, error) {
				mu.Lock()
				n := len(attempts)
				a := &attempt{ctx: ctx, release: make(chan struct{}), fail: tc.fail && n == 0}
				attempts = append(attempts, a)
				mu.Unlock()
				if n >= len(tc.answers) || !tc.answers[n] {
					select {
					case <-a.release:
					case <-time.After(30 * time.Second):
					}
				}
				if a.fail {
					return nil, errors.New("refused")
				}
				ch := make(chan jetstream.KeyValueEntry)
				go func() { <-ctx.Done(); close(ch) }()
				return ch, nil
			}
			restart := make(chan struct{})
			if tc.restart {
				close(restart)
			}
			start := time.Now()
			ch, stop, err := m.newWatcher(mk, restart)
			took := time.Since(start)
			if took < tc.atLeast || took > tc.atMost {
				t.Errorf("took %v, want %v to %v", took, tc.atLeast, tc.atMost)
			}
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
			case tc.want == 0:
				if err == nil {
					t.Fatal("no error from a failed attempt")
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				a := attempts[tc.want-1]
				mu.Unlock()
				if a.ctx.Err() != nil {
					t.Fatal("the watcher taken is stopped")
				}
				stop()
				if _, open := <-ch; open {
					t.Fatal("the watcher taken goes on after its stop")
				}
			}
			// The attempts that answer later are stopped.
			mu.Lock()
			late := attempts[:min(tc.released, len(attempts))]
			mu.Unlock()
			for _, a := range late {
				close(a.release)
				waitFor(t, 5*time.Second, "a late attempt stopped", func() bool { return a.ctx.Err() != nil })
			}
		})
	}
}
