package pane

import (
	"testing"
	"time"
)

// A wake-up is never early, at most one grid late, and entries due within
// one grid cell share it.
func TestFireTime(t *testing.T) {
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ at, want time.Duration }{
		{0, 0},
		{1, clockGrid},
		{clockGrid - 1, clockGrid},
		{clockGrid, clockGrid},
		{clockGrid + time.Microsecond, 2 * clockGrid},
	} {
		if got := fireTime(base.Add(tc.at)); !got.Equal(base.Add(tc.want)) {
			t.Errorf("fireTime(+%v) = +%v, want +%v", tc.at, got.Sub(base), tc.want)
		}
	}
}
