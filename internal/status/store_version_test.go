package status

import (
	"testing"
	"time"
)

// Version moves with every change to the records and only then: a reader
// that keeps a copy of the records knows from it whether the copy is
// stale.
func TestStoreVersion(t *testing.T) {
	now := time.Now()
	set := func(id string) func(*Store) bool {
		return func(s *Store) bool { return s.ApplyReport(Report{State: Working, Progress: NoProgress, ID: id}, now) }
	}
	for _, tc := range []struct {
		name   string
		before []string // records there first (all working)
		change func(*Store) bool
		moves  bool
	}{
		{"a new record", nil, set("a"), true},
		{"a record replaced", []string{"a"}, set("a"), true},
		{"a tree cleared", []string{"a", "a/b"}, func(s *Store) bool {
			return s.ApplyReport(Report{State: Clear, Progress: NoProgress, ID: "a"}, now)
		}, true},
		{"an absent record cleared", []string{"a"}, func(s *Store) bool {
			return s.ApplyReport(Report{State: Clear, Progress: NoProgress, ID: "b"}, now)
		}, false},
		{"all cleared", []string{"a"}, func(s *Store) bool {
			return s.ApplyReport(Report{State: Clear, Progress: NoProgress}, now)
		}, true},
		{"all cleared when none", nil, func(s *Store) bool {
			return s.ApplyReport(Report{State: Clear, Progress: NoProgress}, now)
		}, false},
		{"transient records ended", []string{"a"}, (*Store).EndTransient, true},
		{"no transient record to end", nil, (*Store).EndTransient, false},
		{"a reset", []string{"a"}, (*Store).Reset, true},
		{"a reset of nothing", nil, (*Store).Reset, false},
		{"a report discarded", []string{"a"}, func(s *Store) bool { ok, _ := s.Apply("not a report", now); return ok }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStore(0)
			for _, id := range tc.before {
				set(id)(s)
			}
			v := s.Version()
			changed := tc.change(s)
			if moved := s.Version() != v; moved != tc.moves || changed != tc.moves {
				t.Fatalf("version moved %v, store changed %v; want %v", moved, changed, tc.moves)
			}
		})
	}
}
