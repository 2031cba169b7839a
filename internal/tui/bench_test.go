package tui

import (
	"fmt"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/api"
)

// BenchmarkView100 renders the board with 100 panes and a 32-row preview:
// the work of one frame. At 4 refreshes a second a frame must stay far
// under 250 ms for the board to feel smooth.
func BenchmarkView100(b *testing.B) {
	board := New(nil, "")
	board.width, board.height = 160, 50
	states := []string{"blocked", "working", "idle", "done"}
	since := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)
	for i := 0; i < 100; i++ {
		board.panes = append(board.panes, api.Pane{ID: fmt.Sprintf("p%04d", i), Name: fmt.Sprintf("agent-%d", i), Agent: "claude-code",
			State: states[i%4], Since: since, Cwd: "/src/project", Message: "approve Bash: go test ./..."})
	}
	board.panes = sortPanes(board.panes, nil)
	board.sel = board.panes[50].ID
	for i := 0; i < 32; i++ {
		board.preview = append(board.preview, fmt.Sprintf("● line %d of the transcript with some text to fill the width of the preview", i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		board.View()
	}
}

// BenchmarkUpdate100 is one refresh arriving with 100 panes.
func BenchmarkUpdate100(b *testing.B) {
	board := New(nil, "")
	var panes []api.Pane
	for i := 0; i < 100; i++ {
		panes = append(panes, api.Pane{ID: fmt.Sprintf("p%04d", i), State: []string{"blocked", "working", "idle"}[i%3]})
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		board.Update(panesMsg{panes: append([]api.Pane(nil), panes...)})
	}
}
