package status

import (
	"sort"
	"strings"
	"time"
)

// Record is the current state of one id: the last report for it, whole.
type Record struct {
	Report
	// Updated is when the report arrived.
	Updated time.Time
	seq     uint64
}

// effectiveAppLocked returns the record's app, or the nearest ancestor's.
func (s *Store) effectiveAppLocked(r *Record) string {
	if r.App != "" {
		return r.App
	}
	id := r.ID
	for id != "" {
		i := strings.LastIndexByte(id, '/')
		if i < 0 {
			id = ""
		} else {
			id = id[:i]
		}
		if p, ok := s.records[id]; ok && p.App != "" {
			return p.App
		}
	}
	return ""
}

// Store keeps the records of one terminal. It is not safe for concurrent
// use; its owner serialises access.
type Store struct {
	records map[string]*Record
	limit   int
	seq     uint64
	// version counts the changes to records, for a reader that keeps a
	// copy to know when it is stale.
	version uint64

	// Counters for what was refused or dropped.
	Discarded int
	Evicted   int
}

// NewStore returns a store that keeps at most limit records (at least
// MinRecordsPerPane); limit 0 means DefaultRecordLimit.
func NewStore(limit int) *Store {
	if limit == 0 {
		limit = DefaultRecordLimit
	}
	limit = max(limit, MinRecordsPerPane)
	return &Store{records: make(map[string]*Record), limit: limit}
}

// Apply parses a report body and applies it. It reports whether the store
// changed; a discarded report is counted and returned as an error.
func (s *Store) Apply(body string, now time.Time) (bool, error) {
	r, err := Parse(body)
	if err != nil {
		s.Discarded++
		return false, err
	}
	return s.ApplyReport(r, now), nil
}

// CountDiscarded records a report refused before parsing (oversize).
func (s *Store) CountDiscarded() { s.Discarded++ }

// ApplyReport applies a parsed report: clear removes the record and its
// descendants (all records when there is no id); any other state replaces
// the record whole.
func (s *Store) ApplyReport(r Report, now time.Time) bool {
	if r.State == Clear {
		changed := false
		if r.ID == "" {
			changed = len(s.records) > 0
			clear(s.records)
		} else {
			changed = s.removeTree(r.ID)
		}
		if changed {
			s.version++
		}
		return changed
	}
	s.seq++
	s.version++
	s.records[r.ID] = &Record{Report: r, Updated: now, seq: s.seq}
	if len(s.records) > s.limit {
		s.evictOldest()
	}
	return true
}

func (s *Store) removeTree(id string) bool {
	changed := false
	prefix := id + "/"
	for k := range s.records {
		if k == id || strings.HasPrefix(k, prefix) {
			delete(s.records, k)
			changed = true
		}
	}
	return changed
}

func (s *Store) evictOldest() {
	var oldest *Record
	for _, r := range s.records {
		if oldest == nil || r.seq < oldest.seq {
			oldest = r
		}
	}
	if oldest != nil {
		delete(s.records, oldest.ID)
		s.Evicted++
	}
}

// EndTransient drops working and blocked records, keeping done and error:
// called when the program's process exits or a shell prompt starts (OSC
// 133;A). It reports whether anything was dropped.
func (s *Store) EndTransient() bool {
	changed := false
	for k, r := range s.records {
		if r.State == Working || r.State == Blocked {
			delete(s.records, k)
			changed = true
		}
	}
	if changed {
		s.version++
	}
	return changed
}

// Reset removes every record (a terminal reset, RIS).
func (s *Store) Reset() bool {
	changed := len(s.records) > 0
	clear(s.records)
	if changed {
		s.version++
	}
	return changed
}

// Version changes whenever the records do (it only grows).
func (s *Store) Version() uint64 { return s.version }

// Root returns a copy of the root record (the program itself).
func (s *Store) Root() (Record, bool) {
	r, ok := s.records[""]
	if !ok {
		return Record{}, false
	}
	c := *r
	c.App = s.effectiveAppLocked(r)
	return c, true
}

// Records returns copies of all records sorted by id (root first), each
// with its effective app.
func (s *Store) Records() []Record {
	out := make([]Record, 0, len(s.records))
	for _, r := range s.records {
		c := *r
		c.App = s.effectiveAppLocked(r)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Len returns the number of records.
func (s *Store) Len() int { return len(s.records) }
