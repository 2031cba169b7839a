package fleetlink

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"github.com/corral-dev/corral/internal/fleet"
)

// Job listings: this daemon's running jobs, and the fleet's (queued, and
// running on each host).

// localJobs are this daemon's jobs that have not ended.
func (l *Link) localJobs(host string) []fleet.JobRow {
	out := []fleet.JobRow{}
	for _, p := range (l.d).Panes() {
		if p.Backend == "headless" && p.ExitCode == nil && p.State != "exited" && p.State != "lost" {
			out = append(out, fleet.JobRow{Host: host, ID: p.ID, Name: p.Name, Agent: p.Agent, State: p.State, Since: p.Since})
		}
	}
	return out
}

// Jobs lists this daemon's running jobs.
func (l *Link) Jobs() []fleet.JobRow {
	host := ""
	if n := l.node.Load(); n != nil {
		host = n.cfg.Name
	}
	return l.localJobs(host)
}

// FleetJobs lists the fleet's jobs: those running on every host (from
// the fleet's view), the ones this daemon queued that no host has taken
// yet, and on the hub every queued job.
func (l *Link) FleetJobs(ctx context.Context) ([]fleet.JobRow, error) {
	n, m, err := l.nodeMember()
	if err != nil {
		return nil, err
	}
	rows := m.RunningJobs()
	// Running jobs this daemon queued carry their fleet job's id.
	queued := map[string]bool{}
	n.jobs.Range(func(k, v any) bool {
		id, j := k.(string), v.(*fleetJob)
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.ended {
			return true
		}
		for i := range rows {
			if local, ok := j.started[rows[i].Host]; ok && local == rows[i].ID {
				rows[i].FleetJob, rows[i].From = id, n.cfg.Name
			}
		}
		for _, host := range j.hosts {
			if _, ok := j.started[host]; !ok && (host != "any" || len(j.started) == 0) {
				rows = append(rows, fleet.JobRow{Host: host, ID: id, FleetJob: id, From: n.cfg.Name, Name: j.name, Agent: j.agent,
					State: "queued", Since: j.queued.UTC().Format(time.RFC3339Nano)})
				queued[id+" "+host] = true
			}
		}
		return true
	})
	if n.hub != nil {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		more, err := n.hub.QueuedJobs(ctx)
		cancel()
		if err != nil {
			l.opts.Logf("fleet: list the queued jobs: %v", err)
		}
		for _, q := range more {
			if !queued[q.FleetJob+" "+q.Host] {
				rows = append(rows, q)
			}
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Host != rows[j].Host {
			return rows[i].Host < rows[j].Host
		}
		return rows[i].Since < rows[j].Since
	})
	return rows, nil
}

// noteStarted marks which host runs a fleet job, from its stream's line
// that says so.
func (j *fleetJob) noteStarted(line []byte) {
	var v struct {
		Type   string `json:"type"`
		RunsOn string `json:"runs_on"`
		Job    string `json:"job"`
	}
	if json.Unmarshal(line, &v) != nil || v.Type != fleet.FleetLineType || v.RunsOn == "" {
		return
	}
	if j.started == nil {
		j.started = map[string]string{}
	}
	j.started[v.RunsOn] = v.Job
}
