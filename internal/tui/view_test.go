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
