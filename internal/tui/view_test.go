package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/api"
)

// A pane whose agent has no hooks is marked in the list, and the reason
// shows above the preview when it is selected.
func TestViewIntegrationError(t *testing.T) {
	board := New(nil, "")
	board.width, board.height = 200, 30
	since := time.Now().UTC().Format(time.RFC3339Nano)
	board.panes = []api.Pane{
		{ID: "aaaaa", Agent: "codex", State: "idle", Since: since, IntegrationError: "codex recognised, but its hooks go on its command line"},
		{ID: "bbbbb", Agent: "gemini", State: "idle", Since: since, Integration: "gemini"},
	}
	board.sel = "aaaaa"
	out := board.View().Content
	if !strings.Contains(out, "codex!") || strings.Contains(out, "gemini!") || !strings.Contains(out, "no hooks: codex recognised") {
		t.Fatalf("view:\n%s", out)
	}
	board.sel = "bbbbb"
	if out := board.View().Content; strings.Contains(out, "no hooks") {
		t.Fatalf("a pane with hooks says it has none:\n%s", out)
	}
}

// The selected pane's worktree and its policy's latest decision show
// above its preview.
func TestViewWorktreeAndApproval(t *testing.T) {
	board := New(nil, "")
	board.width, board.height = 200, 30
	now := time.Now().UTC().Format(time.RFC3339Nano)
	board.panes = []api.Pane{{ID: "aaaaa", Agent: "claude-code", State: "working", Since: now,
		Worktree: &api.Worktree{Path: "/src/app.worktrees/corral-x", Branch: "corral/x", Ahead: 2, Dirty: true},
		Approval: &api.Approval{Decision: "allow", Rule: 1, Text: "allowed by rule 1: Bash: ls -la /tmp", Time: now}}}
	board.sel = "aaaaa"
	out := board.View().Content
	for _, want := range []string{"⎇ corral/x ↑2 dirty · /src/app.worktrees/corral-x", "allowed by rule 1: Bash: ls -la /tmp"} {
		if !strings.Contains(out, want) {
			t.Fatalf("view lacks %q:\n%s", want, out)
		}
	}
}

// In a fleet the board groups panes by host (this host first, then the
// others by name), each headed by its reachability, then by state.
func TestViewGroupsByHost(t *testing.T) {
	board := New(nil, "")
	board.width, board.height = 200, 40
	now := time.Now().UTC()
	since := now.Format(time.RFC3339Nano)
	f := &fleetInfo{self: "laptop", hosts: []fleetHost{
		{Host: "laptop", Reachable: true, LastSeen: since},
		{Host: "vm1", Reachable: false, LastSeen: now.Add(-42 * time.Second).Format(time.RFC3339Nano)},
		{Host: "ws", Reachable: true, LastSeen: since},
		{Host: "spare", Reachable: true, LastSeen: since},
	}}
	board.fleet = f
	board.panes = sortPanes([]api.Pane{
		{ID: "ws:w2", Host: "ws", Agent: "codex", State: "idle", Since: since},
		{ID: "vm1:v1", Host: "vm1", Agent: "claude-code", State: "working", Since: since, Unreachable: true},
		{ID: "l1", Host: "laptop", Agent: "claude-code", State: "idle", Since: since},
		{ID: "ws:w1", Host: "ws", Agent: "claude-code", State: "blocked", Since: since},
		{ID: "l2", Host: "laptop", Agent: "gemini", State: "blocked", Since: since},
	}, f)
	var order []string
	for _, p := range board.panes {
		order = append(order, p.ID)
	}
	if got, want := strings.Join(order, " "), "l2 l1 vm1:v1 ws:w1 ws:w2"; got != want {
		t.Fatalf("order %q, want %q", got, want)
	}
	board.sel = "l2"
	out := board.View().Content
	wants := []string{"fleet: 4 hosts, 1 unreachable", "═ laptop · this host · 2 panes", "BLOCKED", "l2", "IDLE", "l1",
		"═ vm1 · \x1b[31munreachable (last seen 42s ago", "· 1 pane", "WORKING", "vm1:v1", "═ ws · reachable · 2 panes", "BLOCKED", "ws:w1", "IDLE", "ws:w2",
		"═ spare · reachable · no panes"}
	rest := out
	for _, w := range wants {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("view lacks %q (in order) in:\n%s", w, out)
		}
		rest = rest[i+len(w):]
	}
	// Outside a fleet: no host headers.
	board.fleet = nil
	if out := board.View().Content; strings.Contains(out, "═") || strings.Contains(out, "fleet:") {
		t.Fatalf("a board outside a fleet shows hosts:\n%s", out)
	}
}
