package pane

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// goid is the calling goroutine's id, from its stack's first line.
func goid() uint64 {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	n, _ := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return n
}

// onDeepStack runs the call on another goroutine and returns once it is
// done; a call that waits (a pane's lock held elsewhere) holds up no other
// pane's call; the shared goroutines are reused, not one a call.
func TestOnDeepStack(t *testing.T) {
	done := make(chan struct{}, 1)
	caller := goid()
	var ran uint64
	onDeepStack(func() { ran = goid() }, done)
	if ran == 0 || ran == caller {
		t.Fatalf("ran on goroutine %d, the caller is %d", ran, caller)
	}

	// One call waits; another, from another reader, runs meanwhile.
	release := make(chan struct{})
	waiting := make(chan struct{})
	first := make(chan struct{})
	go func() {
		onDeepStack(func() { close(waiting); <-release }, make(chan struct{}, 1))
		close(first)
	}()
	<-waiting
	other := make(chan struct{})
	go func() { onDeepStack(func() {}, make(chan struct{}, 1)); close(other) }()
	select {
	case <-other:
	case <-time.After(10 * time.Second):
		t.Fatal("a call waited behind another that was held up")
	}
	select {
	case <-first:
		t.Fatal("the held call returned before it was done")
	default:
	}
	close(release)
	<-first

	// Many readers, many calls each: each call runs whole before its
	// caller goes on, and the goroutines stay few.
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	var mu sync.Mutex
	most := 0
	for r := 0; r < 8; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan struct{}, 1)
			n := 0
			for i := 0; i < 2000; i++ {
				onDeepStack(func() { n++ }, done)
				if n != i+1 {
					t.Errorf("call %d returned before it ran", i)
					return
				}
			}
			mu.Lock()
			most = max(most, runtime.NumGoroutine())
			mu.Unlock()
		}()
	}
	wg.Wait()
	if most-before > 8+8 {
		t.Errorf("%d goroutines for 8 readers' calls (%d before)", most, before)
	}
}

// After a burst of calls at once (every pane drawing after a pause), a
// steady trickle of calls one at a time (300 spinners) keeps one shared
// goroutine busy, not every goroutine the burst started: the others end
// once idle for deepIdle.
func TestSharedGoroutinesEndAfterABurst(t *testing.T) {
	if !proctest.WaitFor(15*time.Second, func() bool { return deepWorkers.Load() == 0 }) {
		t.Fatalf("%d shared goroutines of earlier tests still alive", deepWorkers.Load())
	}
	const burst = 32
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(burst)
	for range burst {
		goShared(func() { started.Done(); <-release })
	}
	started.Wait()
	if n := deepWorkers.Load(); n != burst {
		t.Fatalf("%d shared goroutines for %d calls under way at once", n, burst)
	}
	close(release)

	// Calls one after another, many each deepIdle: each of the burst's
	// goroutines could have one before its time runs out.
	stop := make(chan struct{})
	trickled := make(chan int)
	go func() {
		done := make(chan struct{}, 1)
		n := 0
		for {
			select {
			case <-stop:
				trickled <- n
				return
			case <-time.After(deepIdle / burst / 4):
			}
			onDeepStack(func() {}, done)
			n++
		}
	}()
	ok := proctest.WaitFor(10*time.Second, func() bool { return deepWorkers.Load() <= 2 })
	close(stop)
	n := <-trickled
	if !ok {
		t.Fatalf("%d shared goroutines alive after %d calls one at a time; want at most 2", deepWorkers.Load(), n)
	}
}
