package fleet

import "testing"

// TestApart runs the tests whose bounds are tight (a view that lists a
// host within 50 ms, a refusal within 1 s, a watcher's start between two
// bounds, an attach's echo against the round trip) away from the crowd of parallel tests, each with its NATS
// servers, whose load stretched them. They run beside each other: the
// package's serial phase is the longest of them rather than their sum.
func TestApart(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"FleetCommandFailuresSayWhy", commandFailuresSayWhy},
		{"HostileHostIsBounded", hostileHostIsBounded},
		{"NewWatcher", newWatcherTest},
		{"AttachAcrossHosts", attachAcrossHosts},
		{"ViewSkipsBadRecords", viewSkipsBadRecords},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}
