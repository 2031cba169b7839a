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

// boardOf is a board of n panes in four states, the middle one selected.
func boardOf(n int) *Board {
	board := New(nil, "")
	board.width, board.height = 160, 50
	states := []string{"blocked", "working", "idle", "done"}
	since := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)
	for i := 0; i < n; i++ {
		board.panes = append(board.panes, api.Pane{ID: fmt.Sprintf("p%04d", i), Name: fmt.Sprintf("agent-%d", i), Agent: "claude-code",
			State: states[i%4], Since: since, Cwd: "/src/project", Message: "approve Bash: go test ./..."})
	}
	board.panes = sortPanes(board.panes, nil)
	board.sel = board.panes[n/2].ID
	for i := 0; i < 32; i++ {
		board.preview = append(board.preview, fmt.Sprintf("● line %d of the transcript with some text to fill the width of the preview", i))
	}
	return board
}

// BenchmarkFrame is one frame (a key and the view it draws) at 20 and at
// 1,000 panes: only the rows on screen are drawn, so the two cost about
// the same (compare the ns/op of the sizes).
func BenchmarkFrame(b *testing.B) {
	for _, n := range []int{20, 1000} {
		for _, c := range []struct{ name, key, filter string }{
			{"scroll", "j", ""},
			{"page", "pgdown", ""},
			{"filtered", "j", "agent-1"},
		} {
			b.Run(fmt.Sprintf("%s/%d", c.name, n), func(b *testing.B) {
				board := boardOf(n)
				board.filter = c.filter
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					board.key(c.key)
					if i%64 == 63 {
						board.move(-len(board.panes)) // back to the top, so that scrolling goes on
					}
					board.View()
				}
			})
		}
	}
}

// BenchmarkFilterKey is one key typed into the filter at 1,000 panes:
// the one time the filter runs over every pane.
func BenchmarkFilterKey(b *testing.B) {
	board := boardOf(1000)
	board.typing = true
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		board.key("a")
		board.key("backspace")
		board.View()
	}
}
