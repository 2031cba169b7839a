package fleet

import (
	"testing"

	"github.com/corral-dev/corral/internal/proctest"
)

// TestApart runs the tests whose bounds are tight (a view that lists a
// host within 50 ms, a refusal within 1 s, a watcher's start between two
// bounds, an attach's echo against the round trip) away from the crowd of
// parallel tests, each with its NATS servers, whose load stretched them.
// They run beside each other: the package's serial phase is the longest
// of them rather than their sum.
func TestApart(t *testing.T) {
	proctest.Beside(t,
		proctest.Case{Name: "FleetCommandFailuresSayWhy", Run: commandFailuresSayWhy},
		proctest.Case{Name: "HostileHostIsBounded", Run: hostileHostIsBounded},
		proctest.Case{Name: "NewWatcher", Run: newWatcherTest},
		proctest.Case{Name: "AttachAcrossHosts", Run: attachAcrossHosts},
		proctest.Case{Name: "ViewSkipsBadRecords", Run: viewSkipsBadRecords},
	)
}
