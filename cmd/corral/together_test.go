package main

import (
	"sync"
	"testing"
)

// atOnce runs subtests all at once inside the calling test's own parallel
// slot: run starts one, wait (deferred by the caller) waits for them all.
// Subtests that call t.Parallel() would instead queue behind every test
// already waiting for a slot and start last, a long tail at the end of the
// package's run.
func atOnce(t *testing.T) (run func(name string, f func(t *testing.T)), wait func()) {
	var wg sync.WaitGroup
	return func(name string, f func(t *testing.T)) { wg.Go(func() { t.Run(name, f) }) }, wg.Wait
}
