package fleetlink

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/fleet"
	"github.com/corral-dev/corral/internal/httpapi"
)

// fleetJob is a job this daemon put on the fleet's queue: its lines as
// they come, for the caller's stream. mu guards the fields that change
// (lines, grew, ended, started); it is taken last, and never across a call
// to the fleet.
type fleetJob struct {
	mu     sync.Mutex
	lines  [][]byte
	grew   chan struct{}
	ended  bool
	cancel context.CancelFunc
	// each: a job on each of several hosts; cancelling it cancels theirs.
	each bool
	// For corral jobs: the hosts it was queued for ("any": any host),
	// which took it (host → its pane id there), what it runs, and when.
	hosts       []string
	started     map[string]string
	name, agent string
	queued      time.Time
}

func (j *fleetJob) add(line []byte) {
	j.mu.Lock()
	j.noteStarted(line)
	j.lines = append(j.lines, append([]byte(nil), line...))
	close(j.grew)
	j.grew = make(chan struct{})
	j.mu.Unlock()
}

// FleetExec queues a job on the fleet: for one host (any, or --host), or
// one on each host --hosts or --all-hosts match.
func (l *Link) FleetExec(req fleet.ExecRequest) (fleet.ExecStarted, error) {
	n, m, err := l.nodeMember()
	if err != nil {
		return fleet.ExecStarted{}, err
	}
	if len(req.Exec.Command) == 0 {
		return fleet.ExecStarted{}, httpapi.BadRequest(errors.New("no command; say what to run after --"))
	}
	if req.Retry < 0 || req.Retry > 10 {
		return fleet.ExecStarted{}, httpapi.BadRequest(errors.New("--retry must be from 0 to 10"))
	}
	if down, since := m.HubDown(); down {
		return fleet.ExecStarted{}, httpapi.Coded(http.StatusServiceUnavailable, "hub_unreachable", fmt.Errorf("%w: the job was not queued", hubDownError(since)))
	}
	var each []string
	if len(req.Hosts) > 0 || req.AllHosts {
		if req.Host != "" {
			return fleet.ExecStarted{}, httpapi.BadRequest(errors.New("give --host, or --hosts/--all-hosts, not both"))
		}
		if each = m.JobHosts(req.Hosts); len(each) == 0 {
			return fleet.ExecStarted{}, httpapi.Coded(http.StatusServiceUnavailable, "host_unreachable", fmt.Errorf("no reachable host that takes jobs matches %s (nothing queued); corral fleet status lists the hosts and their max_jobs",
				strings.Join(append([]string{"*"}, req.Hosts...)[min(1, len(req.Hosts)):], ",")))
		}
	}
	if req.Host != "" {
		known := false
		for _, h := range m.Hosts() {
			if h.Host == req.Host {
				known = true
				if h.MaxJobs == 0 {
					return fleet.ExecStarted{}, httpapi.BadRequest(fmt.Errorf("host %s takes no fleet jobs (its max_jobs is 0; it joins with --max-jobs N to take some)", req.Host))
				}
				if !h.Reachable {
					return fleet.ExecStarted{}, httpapi.Coded(http.StatusServiceUnavailable, "host_unreachable", fmt.Errorf("host %s is unreachable (last seen %s); leave out --host to let any host take the job", req.Host, h.LastSeen))
				}
			}
		}
		if !known {
			return fleet.ExecStarted{}, httpapi.Coded(http.StatusBadRequest, "not_found", fmt.Errorf("no host %s in the fleet; corral fleet status lists them", req.Host))
		}
	}
	// The caller's environment stays here: the job runs in its host's
	// own (plus --env), and the queue is readable by the fleet's hosts.
	req.Exec.CallerEnv = nil
	id := fleet.NewJobID()
	ctx, cancel := context.WithCancel(context.Background())
	j := &fleetJob{grew: make(chan struct{}), cancel: cancel, each: each != nil, hosts: each, name: req.Exec.Name, agent: req.Exec.Agent,
		queued: time.Now()}
	if each == nil {
		j.hosts = []string{cmp.Or(req.Host, "any")}
	}
	n.jobs.Store(id, j)
	go func() {
		defer cancel()
		var err error
		if each != nil {
			m.SubmitEach(ctx, req.Exec, each, req.Retry, j.add)
		} else {
			err = m.SubmitJob(ctx, id, req.Exec, req.Host, req.Retry, j.add)
		}
		if err != nil {
			b, _ := json.Marshal(map[string]any{"type": "outcome", "outcome": map[string]any{"state": "error", "reason": err.Error(), "exit_code": 1}})
			j.add(b)
		}
		j.mu.Lock()
		j.ended = true
		close(j.grew)
		j.grew = make(chan struct{})
		j.mu.Unlock()
		time.AfterFunc(time.Minute, func() { n.jobs.Delete(id) })
	}()
	return fleet.ExecStarted{ID: id, Hosts: each}, nil
}

// job is a job this daemon queued, by its fleet job id.
func (l *Link) job(id string) (*fleetJob, error) {
	if n := l.node.Load(); n != nil {
		if v, ok := n.jobs.Load(id); ok {
			return v.(*fleetJob), nil
		}
	}
	return nil, httpapi.NotFound(fmt.Errorf("no fleet job %s here", id))
}

// FleetJobFeed follows the lines of a job this daemon queued.
func (l *Link) FleetJobFeed(id string) (httpapi.LineFeed, error) {
	j, err := l.job(id)
	if err != nil {
		return nil, err
	}
	return j, nil
}

// Since returns the job's lines from number next on, the number after
// them, a channel closed when more come, and whether the run ended.
func (j *fleetJob) Since(next int) ([][]byte, int, <-chan struct{}, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.lines[min(next, len(j.lines)):], len(j.lines), j.grew, j.ended
}

// FleetJobKill cancels a job this daemon queued: on each host that took
// it, and here.
func (l *Link) FleetJobKill(id string) (fleet.CancelResult, error) {
	j, err := l.job(id)
	if err != nil {
		return fleet.CancelResult{}, err
	}
	// The node may have gone (fleet leave) since the job was found.
	if n := l.node.Load(); n != nil {
		if m := n.member.Load(); m != nil {
			_ = m.CancelJob(id)
		}
	}
	if j.each {
		j.cancel() // each host's job is cancelled, and the run ends
	} else {
		// A job no host has taken yet ends here.
		time.AfterFunc(execCancelWait, j.cancel)
	}
	return fleet.CancelResult{ID: id, Status: "cancelling"}, nil
}

// execCancelWait is how long a cancelled fleet job may take to confirm
// its end before the caller's daemon gives it up.
const execCancelWait = 5 * time.Second
