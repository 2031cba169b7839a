package main

import (
	"testing"

	"github.com/corral-dev/corral/internal/proctest"
)

// TestApart runs the tests that measure time, or race a settle window, away
// from the crowd of parallel tests (8 at once, each with its daemon and
// panes), whose load stretched their bounds. They run beside each other: a
// handful of daemons costs their bounds little, and the package's serial
// phase the longest of them rather than their sum.
func TestApart(t *testing.T) {
	proctest.Beside(t,
		proctest.Case{Name: "StuckPanesAnswerInBoundedTime", Run: stuckPanesAnswerInBoundedTime},
		proctest.Case{Name: "SendEnterRefusedWhenTheTextOpensADialog", Run: sendEnterRefusedWhenTheTextOpensADialog},
		proctest.Case{Name: "SendEnterRefusedWhenADialogOpensLate", Run: sendEnterRefusedWhenADialogOpensLate},
		proctest.Case{Name: "DaemonCrashLosesNothing", Run: daemonCrashLosesNothing},
		proctest.Case{Name: "LsDuringConcurrentRuns", Run: lsDuringConcurrentRuns},
		proctest.Case{Name: "ReadoptedBlockKeepsItsWords", Run: readoptedBlockKeepsItsWords},
	)
}
