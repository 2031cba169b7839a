package main

import (
	"flag"
	"strconv"
	"sync"
	"testing"
)

// atOnce runs subtests at once inside the calling test's own parallel
// slot, no more at a time than -parallel says: run starts one, wait
// (deferred by the caller) waits for them all. Subtests that call
// t.Parallel() would instead queue behind every test already waiting for a
// slot and start last, a long tail at the end of the package's run.
func atOnce(t *testing.T) (run func(name string, f func(t *testing.T)), wait func()) {
	n, err := strconv.Atoi(flag.Lookup("test.parallel").Value.String())
	if err != nil || n < 1 {
		n = 1
	}
	slots := make(chan struct{}, n)
	var wg sync.WaitGroup
	run = func(name string, f func(t *testing.T)) {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			t.Run(name, f)
		})
	}
	return run, wg.Wait
}
