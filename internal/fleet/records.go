package fleet

import (
	"encoding/json"
	"path"
	"slices"
	"strconv"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/eventlog"
)

// PaneRecord is a pane in the fleet: the pane bucket's value.
type PaneRecord struct {
	Host string `json:"host"`
	api.Pane
	// Sent is the host's clock when it wrote the record.
	Sent time.Time `json:"sent"`
}

// Heartbeat is a host's value in the hosts bucket, written every second.
type Heartbeat struct {
	Host string `json:"host"`
	// HostID is the machine's (LoadHostID): the same under a new name.
	HostID  string `json:"host_id,omitempty"`
	Version string `json:"version"`
	Panes   int    `json:"panes"`
	Jobs    int    `json:"jobs"`
	MaxJobs int    `json:"max_jobs"`
	// Access is what the host's credential allows (AccessControl, …; ""
	// when no corral hub said: a team's own NATS).
	Access string    `json:"access,omitempty"`
	Sent   time.Time `json:"sent"`
}

// A host's access, as fleet status shows it.
const (
	AccessControl     = "control"           // commands other hosts, submits and takes jobs
	AccessObserve     = "observe-only"      // neither commands nor takes jobs
	AccessObserveJobs = "observe-only+jobs" // takes jobs, commands nothing
)

func (r Rights) access() string {
	switch {
	case r.Control:
		return AccessControl
	case r.Jobs:
		return AccessObserveJobs
	}
	return AccessObserve
}

// HostStatus is one row of corral fleet status.
type HostStatus struct {
	Host      string `json:"host"`
	Reachable bool   `json:"reachable"`
	LastSeen  string `json:"last_seen"` // RFC 3339, "" if never
	Panes     int    `json:"panes"`
	Jobs      int    `json:"jobs"`
	Version   string `json:"version"`
	MaxJobs   int    `json:"max_jobs"`
	// Access is what its credential allows: control, observe-only,
	// observe-only+jobs ("" unknown).
	Access string `json:"access,omitempty"`
	// AnyHostJobs: the host takes jobs queued for any host (reachable,
	// max_jobs > 0).
	AnyHostJobs bool   `json:"any_host_jobs"`
	Problem     string `json:"problem,omitempty"`
	// UnreachableFor is how long the host has been unreachable
	// (seconds, 0 when reachable).
	UnreachableFor int64 `json:"unreachable_for_s,omitempty"`
}

// Event is an event of the fleet's stream: a host's event, with its host.
type Event struct {
	Host string
	eventlog.Event
	// StreamSeq is the event's place in the fleet's stream.
	StreamSeq uint64
}

// MarshalJSON writes the event's own fields with "host" and "stream_seq".
func (e Event) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(e.Event)
	if err != nil {
		return nil, err
	}
	h, _ := json.Marshal(e.Host)
	out := []byte(`{"host":` + string(h) + `,"stream_seq":` + strconv.FormatUint(e.StreamSeq, 10) + `,`)
	return append(out, b[1:]...), nil
}

// PaneFilter keeps the panes of some hosts, or in some states; an empty
// field keeps all. Hosts are glob patterns (path.Match).
type PaneFilter struct {
	Hosts  []string
	States []string
}

// Keep says whether a pane passes the filter.
func (f PaneFilter) Keep(p PaneRecord) bool {
	return (len(f.Hosts) == 0 || MatchHost(f.Hosts, p.Host)) && (len(f.States) == 0 || slices.Contains(f.States, p.State))
}

// MatchHost says whether a host's name matches one of the patterns
// (globs as path.Match: web-*, db-?); a malformed pattern matches as
// plain text.
func MatchHost(patterns []string, host string) bool {
	for _, p := range patterns {
		if ok, err := path.Match(p, host); ok || (err != nil && p == host) {
			return true
		}
	}
	return false
}
