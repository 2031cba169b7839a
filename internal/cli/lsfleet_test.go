package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/fleet"
)

// Every host has a line of its own, with no pane too; an unreachable host's
// reason leaves the columns as narrow as the panes' own.
func TestPrintFleetPanes(t *testing.T) {
	since := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)
	pane := func(host, id, state string) fleet.PaneRecord {
		return fleet.PaneRecord{Host: host, Pane: api.Pane{ID: id, Name: "n" + id, Agent: "claude-code", State: state, Since: since, Source: "screen"}}
	}
	hosts := []fleet.HostStatus{
		{Host: "a", Reachable: true, Panes: 2, MaxJobs: 2, Jobs: 1},
		{Host: "b", Reachable: false, UnreachableFor: 3 * 3600, Panes: 1},
		{Host: "c", Reachable: true},
		{Host: "d", Reachable: false},
	}
	panes := []fleet.PaneRecord{pane("a", "a1", "working"), pane("a", "a2", "blocked"), pane("b", "b1", "idle")}
	tests := []struct {
		name, hosts, states string
		panes               []fleet.PaneRecord
		want                []string // the lines, in order, that start so
	}{
		{"all", "", "", panes, []string{
			"HOST:ID", "# a  reachable, 2 panes (1 blocked, 1 working), jobs 1/2", "a:a1", "a:a2",
			"# b  unreachable for 3h0m0s: its last known states, 1 pane (1 idle)", "b:b1",
			"# c  reachable, no panes", "# d  unreachable: its last known states, no panes"}},
		{"some hosts", "c,b*", "", panes[2:], []string{
			"HOST:ID", "# b  unreachable for 3h0m0s: its last known states, 1 pane (1 idle)", "b:b1", "# c  reachable, no panes"}},
		{"some states", "", "blocked", panes[1:2], []string{
			"HOST:ID", "# a  reachable, 1 pane, jobs 1/2", "a:a2", "# b  unreachable for 3h0m0s: its last known states, no blocked pane",
			"# c  reachable, no blocked pane", "# d  unreachable: its last known states, no blocked pane"}},
		{"no host", "", "", nil, []string{"HOST:ID", "# a  reachable, no panes, jobs 1/2", "# b  unreachable for 3h0m0s: its last known states, no panes",
			"# c  reachable, no panes", "# d  unreachable: its last known states, no panes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printFleetPanes(&out, tt.panes, hosts, tt.hosts, tt.states); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), len(tt.want), out.String())
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Fatalf("line %d is %q, want it to start %q:\n%s", i, lines[i], w, out.String())
				}
			}
			// The NAME column starts two spaces after the widest HOST:ID.
			widest := len("HOST:ID")
			for _, p := range tt.panes {
				widest = max(widest, len(p.Host+":"+p.ID))
			}
			for _, l := range lines {
				if strings.HasPrefix(l, "#") {
					continue
				}
				if col := strings.Index(l, "NAME"); strings.HasPrefix(l, "HOST:ID") && col != widest+2 {
					t.Fatalf("NAME at column %d, want %d:\n%s", col, widest+2, out.String())
				}
				if !strings.HasPrefix(l, "HOST:ID") && l[widest+2] != 'n' {
					t.Fatalf("a pane's name not under NAME in %q:\n%s", l, out.String())
				}
			}
		})
	}
}
