package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/corral-dev/corral/internal/api"
)

// JobHosts lists the reachable hosts that take jobs (max_jobs > 0) and
// match one of the patterns (all of them when there is none).
func (m *Member) JobHosts(patterns []string) []string {
	var out []string
	for _, h := range m.Hosts() {
		if h.Reachable && h.MaxJobs > 0 && (len(patterns) == 0 || MatchHost(patterns, h.Host)) {
			out = append(out, h.Host)
		}
	}
	sort.Strings(out)
	return out
}

// HostOutcome is how a job ended on one host of a run on several.
type HostOutcome struct {
	Host     string `json:"host"`
	State    string `json:"state"`
	ExitCode int    `json:"exit_code"`
	Reason   string `json:"reason,omitempty"`
}

// HostOutcomeType is the type of the line that says how one host's job
// of a run on several ended.
const HostOutcomeType = "host_outcome"

// SubmitEach runs one job per host, all at once, and calls emit with
// their lines, each with its "host"; a host's own outcome comes as a
// line of type host_outcome (and a fleet note), and the run's outcome
// last: done when every host's job was, its exit code the worst (the
// highest; a job that failed with 0 counts as 1).
func (m *Member) SubmitEach(ctx context.Context, req api.ExecRequest, hosts []string, retry int, emit func([]byte)) {
	var mu sync.Mutex
	send := func(b []byte) {
		mu.Lock()
		defer mu.Unlock()
		emit(b)
	}
	outcomes := make([]HostOutcome, len(hosts))
	var wg sync.WaitGroup
	for i, host := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := HostOutcome{Host: host, State: "error", ExitCode: 1, Reason: "the job's stream ended without its outcome"}
			err := m.SubmitJob(ctx, "", req, host, retry, func(line []byte) {
				var probe struct {
					Type    string `json:"type"`
					Outcome *struct {
						State    string `json:"state"`
						ExitCode int    `json:"exit_code"`
						Reason   string `json:"reason"`
					} `json:"outcome"`
				}
				_ = json.Unmarshal(line, &probe)
				if probe.Type == "outcome" && probe.Outcome != nil {
					o.State, o.ExitCode, o.Reason = probe.Outcome.State, probe.Outcome.ExitCode, probe.Outcome.Reason
					return
				}
				send(withHost(line, host))
			})
			if err != nil {
				o.Reason = err.Error()
			}
			if o.State != "done" && o.ExitCode == 0 {
				o.ExitCode = 1 // failed, though the agent exited 0
			}
			outcomes[i] = o
			b, _ := json.Marshal(map[string]any{"type": HostOutcomeType, "host": host, "outcome": o})
			send(b)
			note := fmt.Sprintf("host %s: %s, exit %d", host, o.State, o.ExitCode)
			if o.State != "done" && o.Reason != "" {
				note += ": " + o.Reason
			}
			send(withHost(diagnosticLine(note), host))
		}()
	}
	wg.Wait()
	send(runOutcome(outcomes))
}

// runOutcome is the outcome line of a run on several hosts.
func runOutcome(outcomes []HostOutcome) []byte {
	state, worst := "done", 0
	var failed []string
	for _, o := range outcomes {
		worst = max(worst, o.ExitCode)
		if o.State != "done" {
			state = "error"
			failed = append(failed, fmt.Sprintf("%s (exit %d)", o.Host, o.ExitCode))
		}
	}
	reason := ""
	if len(failed) > 0 {
		reason = fmt.Sprintf("%d of %d hosts failed: %s", len(failed), len(outcomes), strings.Join(failed, ", "))
	}
	b, _ := json.Marshal(map[string]any{"type": "outcome", "hosts": outcomes,
		"outcome": map[string]any{"state": state, "reason": reason, "exit_code": worst, "diagnostics": 0}})
	return b
}

// withHost adds "host" to a line that is a JSON object.
func withHost(line []byte, host string) []byte {
	if len(line) < 2 || line[0] != '{' {
		return line
	}
	h, _ := json.Marshal(host)
	out := append([]byte(`{"host":`), h...)
	if rest := strings.TrimSpace(string(line[1:])); rest != "}" {
		out = append(out, ',')
	}
	return append(out, line[1:]...)
}
