package procs

import (
	"runtime"
	"testing"
)

func TestStopMemProfile(t *testing.T) {
	old := runtime.MemProfileRate
	t.Cleanup(func() { runtime.MemProfileRate = old })
	for _, c := range []struct {
		godebug string
		rate    int // MemProfileRate after, from 512 KB
	}{
		{"", 0},
		{"gctrace=1", 0},
		{"memprofilerate=64", 512 << 10},
		{"gctrace=1,memprofilerate=1", 512 << 10},
		{"madvdontneed=1", 0},
	} {
		runtime.MemProfileRate = 512 << 10
		t.Setenv("GODEBUG", c.godebug)
		StopMemProfile()
		if runtime.MemProfileRate != c.rate {
			t.Errorf("GODEBUG=%q: MemProfileRate %d, want %d", c.godebug, runtime.MemProfileRate, c.rate)
		}
	}
}
