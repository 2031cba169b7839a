package main

import "testing"

// TestApart runs the tests that measure time, or race a settle window, away
// from the crowd of parallel tests (8 at once, each with its daemon and
// panes), whose load stretched their bounds. They run beside each other: a
// handful of daemons costs their bounds little, and the package's serial
// phase the longest of them rather than their sum.
func TestApart(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"StuckPanesAnswerInBoundedTime", stuckPanesAnswerInBoundedTime},
		{"SendEnterRefusedWhenTheTextOpensADialog", sendEnterRefusedWhenTheTextOpensADialog},
		{"SendEnterRefusedWhenADialogOpensLate", sendEnterRefusedWhenADialogOpensLate},
		{"DaemonCrashLosesNothing", daemonCrashLosesNothing},
		{"LsDuringConcurrentRuns", lsDuringConcurrentRuns},
		{"ReadoptedBlockKeepsItsWords", readoptedBlockKeepsItsWords},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}
