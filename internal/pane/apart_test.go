package pane

import (
	"testing"

	"github.com/corral-dev/corral/internal/proctest"
)

// TestApart runs the tests that bound a wait (a stuck pane's answers, a
// hook's caller while the pane is busy, a clock entry behind a slow one)
// away from the package's parallel tests, whose load stretched them, and
// beside each other: the serial phase is the longest of them, not their
// sum. The tests that count goroutines run alone, as their own tests.
func TestApart(t *testing.T) {
	proctest.Beside(t,
		proctest.Case{Name: "StuckPaneAnswersInBoundedTime", Run: stuckPaneAnswersInBoundedTime},
		proctest.Case{Name: "HookWhileBusyIsKept", Run: hookWhileBusyIsKept},
		proctest.Case{Name: "ClockSlowWorkRunsAside", Run: clockSlowWorkRunsAside},
	)
}
