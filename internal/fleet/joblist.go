package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// JobRow is a job in corral jobs: queued, or running on a host.
type JobRow struct {
	Host  string `json:"host"` // "any" for a queued job any host may take
	ID    string `json:"id"`   // the pane id on its host; the fleet job's id while queued
	Name  string `json:"name,omitempty"`
	Agent string `json:"agent,omitempty"`
	State string `json:"state"` // queued, or the pane's state
	Since string `json:"since,omitempty"`
	// FleetJob is the fleet job's id, From the host that queued it,
	// when known.
	FleetJob string `json:"fleet_job,omitempty"`
	From     string `json:"from,omitempty"`
}

// maxQueuedListed bounds the queued jobs the hub reads for a listing.
const maxQueuedListed = 1000

// QueuedJobs reads the jobs waiting in the fleet's queue (the hub's
// connection may; members may not read the queue).
func (h *Hub) QueuedJobs(ctx context.Context) ([]JobRow, error) {
	st, err := h.keeper.js.Stream(ctx, JobsStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	info := st.CachedInfo().State
	var out []JobRow
	for seq := info.FirstSeq; seq <= info.LastSeq && info.Msgs > 0 && len(out) < maxQueuedListed; seq++ {
		msg, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // taken
		}
		if err != nil {
			return out, err
		}
		var jr JobRequest
		if json.Unmarshal(msg.Data, &jr) != nil {
			continue
		}
		host := strings.TrimPrefix(msg.Subject, subjJobFor)
		if msg.Subject == subjJobAny {
			host = "any"
		}
		out = append(out, JobRow{Host: host, ID: jr.ID, FleetJob: jr.ID, From: jr.From, Name: jr.Exec.Name, Agent: jr.Exec.Agent,
			State: "queued", Since: msg.Time.UTC().Format(time.RFC3339Nano)})
	}
	return out, nil
}

// RunningJobs are the fleet's jobs running now: every host's headless
// panes that have not ended, as the view has them.
func (m *Member) RunningJobs() []JobRow {
	var out []JobRow
	for _, p := range m.Panes() {
		if p.Backend == "headless" && p.ExitCode == nil && p.State != "exited" && p.State != "lost" {
			out = append(out, JobRow{Host: p.Host, ID: p.ID, Name: p.Name, Agent: p.Agent, State: p.State, Since: p.Since})
		}
	}
	return out
}
