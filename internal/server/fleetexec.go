package server

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
// they come, for the caller's stream.
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

func (s *Server) handleFleetExec(w http.ResponseWriter, r *http.Request) {
	var req fleet.ExecRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	m := s.fleetMemberHTTP(w)
	if m == nil {
		return
	}
	if len(req.Exec.Command) == 0 {
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", errors.New("no command; say what to run after --"))
		return
	}
	if req.Retry < 0 || req.Retry > 10 {
		httpapi.Fail(w, http.StatusBadRequest, "bad_request", errors.New("--retry must be from 0 to 10"))
		return
	}
	if down, since := m.HubDown(); down {
		httpapi.Fail(w, http.StatusServiceUnavailable, "hub_unreachable", fmt.Errorf("%w: the job was not queued", hubDownError(since)))
		return
	}
	var each []string
	if len(req.Hosts) > 0 || req.AllHosts {
		if req.Host != "" {
			httpapi.Fail(w, http.StatusBadRequest, "bad_request", errors.New("give --host, or --hosts/--all-hosts, not both"))
			return
		}
		if each = m.JobHosts(req.Hosts); len(each) == 0 {
			httpapi.Fail(w, http.StatusServiceUnavailable, "host_unreachable", fmt.Errorf("no reachable host that takes jobs matches %s (nothing queued); corral fleet status lists the hosts and their max_jobs",
				strings.Join(append([]string{"*"}, req.Hosts...)[min(1, len(req.Hosts)):], ",")))
			return
		}
	}
	if req.Host != "" {
		known := false
		for _, h := range m.Hosts() {
			if h.Host == req.Host {
				known = true
				if h.MaxJobs == 0 {
					httpapi.Fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("host %s takes no fleet jobs (its max_jobs is 0; it joins with --max-jobs N to take some)", req.Host))
					return
				}
				if !h.Reachable {
					httpapi.Fail(w, http.StatusServiceUnavailable, "host_unreachable", fmt.Errorf("host %s is unreachable (last seen %s); leave out --host to let any host take the job", req.Host, h.LastSeen))
					return
				}
			}
		}
		if !known {
			httpapi.Fail(w, http.StatusBadRequest, "not_found", fmt.Errorf("no host %s in the fleet; corral fleet status lists them", req.Host))
			return
		}
	}
	// The caller's environment stays here: the job runs in its host's
	// own (plus --env), and the queue is readable by the fleet's hosts.
	req.Exec.CallerEnv = nil
	n := s.fleetNode()
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
	httpapi.Reply(w, fleet.ExecStarted{ID: id, Hosts: each})
}

func (s *Server) fleetJob(w http.ResponseWriter, r *http.Request) *fleetJob {
	n := s.fleetNode()
	if n != nil {
		if v, ok := n.jobs.Load(r.PathValue("id")); ok {
			return v.(*fleetJob)
		}
	}
	httpapi.Fail(w, http.StatusNotFound, "not_found", fmt.Errorf("no fleet job %s here", r.PathValue("id")))
	return nil
}

func (s *Server) handleFleetJobStream(w http.ResponseWriter, r *http.Request) {
	j := s.fleetJob(w, r)
	if j == nil {
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	next := 0
	for {
		j.mu.Lock()
		lines, ended, grew := j.lines[next:], j.ended, j.grew
		next = len(j.lines)
		j.mu.Unlock()
		for _, l := range lines {
			_ = rc.SetWriteDeadline(time.Now().Add(httpapi.StreamWriteWait))
			if _, err := w.Write(append(l, '\n')); err != nil {
				return
			}
		}
		_ = rc.Flush()
		if ended {
			return
		}
		select {
		case <-grew:
		case <-r.Context().Done():
			return
		}
	}
}

func (s *Server) handleFleetJobKill(w http.ResponseWriter, r *http.Request) {
	j := s.fleetJob(w, r)
	if j == nil {
		return
	}
	if m := s.fleetNode().member.Load(); m != nil {
		_ = m.CancelJob(r.PathValue("id"))
	}
	if j.each {
		j.cancel() // each host's job is cancelled, and the run ends
	} else {
		// A job no host has taken yet ends here.
		time.AfterFunc(ExecCancelWait, j.cancel)
	}
	httpapi.Reply(w, fleet.CancelResult{ID: r.PathValue("id"), Status: "cancelling"})
}

// ExecCancelWait is how long a cancelled fleet job may take to confirm
// its end before the caller's daemon gives it up.
const ExecCancelWait = 5 * time.Second
