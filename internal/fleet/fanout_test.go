package fleet

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/api"
)

func TestWithHost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`{"type":"x"}`, `{"host":"h","type":"x"}`},
		{`{}`, `{"host":"h"}`},
		{`{ }`, `{"host":"h" }`},
		{`not json`, `not json`},
		{``, ``},
	} {
		if got := string(withHost([]byte(tc.in), "h")); got != tc.want {
			t.Errorf("withHost(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// One job on each matching host: every line says its host, each host's
// outcome comes, and the run's outcome has the worst exit code.
func TestFleetJobOnEachHost(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	w1, w2, db := newFakeLocal(), newFakeLocal(), newFakeLocal()
	w2.jobExit = 3
	f.join("web-1", w1, 1)
	f.join("web-2", w2, 1)
	f.join("db-1", db, 1)
	f.join("web-3", newFakeLocal(), 0) // takes no jobs
	waitFor(t, 5*time.Second, "every host on the hub", func() bool { return len(f.hm.JobHosts(nil)) == 3 })
	if got := f.hm.JobHosts([]string{"web-*"}); !slices.Equal(got, []string{"web-1", "web-2"}) {
		t.Fatalf("JobHosts(web-*) = %v", got)
	}
	var lines []string
	f.hm.SubmitEach(context.Background(), api.ExecRequest{Agent: "claude", Command: []string{"true"}}, []string{"web-1", "web-2"}, 0, func(b []byte) {
		lines = append(lines, string(b))
	})
	perHost := map[string]int{}
	var outcomes []HostOutcome
	for _, l := range lines[:len(lines)-1] {
		var v struct {
			Host    string       `json:"host"`
			Type    string       `json:"type"`
			Outcome *HostOutcome `json:"outcome"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil || v.Host == "" {
			t.Fatalf("a line without its host: %s", l)
		}
		if v.Type == "outcome" {
			t.Fatalf("a host's outcome passed as the run's: %s", l)
		}
		if v.Type == HostOutcomeType {
			outcomes = append(outcomes, *v.Outcome)
		}
		perHost[v.Host]++
	}
	if perHost["web-1"] == 0 || perHost["web-2"] == 0 || len(perHost) != 2 || len(outcomes) != 2 {
		t.Fatalf("lines per host %v, outcomes %v:\n%s", perHost, outcomes, strings.Join(lines, "\n"))
	}
	var run struct {
		Type    string        `json:"type"`
		Hosts   []HostOutcome `json:"hosts"`
		Outcome struct {
			State    string `json:"state"`
			ExitCode int    `json:"exit_code"`
			Reason   string `json:"reason"`
		} `json:"outcome"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &run); err != nil || run.Type != "outcome" {
		t.Fatalf("the last line is not the run's outcome: %s", lines[len(lines)-1])
	}
	if run.Outcome.State != "error" || run.Outcome.ExitCode != 3 || !strings.Contains(run.Outcome.Reason, "web-2 (exit 3)") || len(run.Hosts) != 2 {
		t.Fatalf("the run's outcome: %+v", run)
	}
}
