package board

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/term"
)

// screenBackend has n panes, each with a 30-row coloured screen.
type screenBackend struct {
	manyBackend
	screen [][]term.Run
}

func (s *screenBackend) StyledScreen(string) ([][]term.Run, error) { return s.screen, nil }

func newScreenBackend(n int) *screenBackend {
	sb := &screenBackend{}
	for i := range n {
		sb.panes = append(sb.panes, api.Pane{ID: fmt.Sprintf("p%04d", i), Name: fmt.Sprintf("agent-%d", i), Agent: "claude-code",
			State: []string{"working", "idle", "done", "blocked"}[i%4], Cwd: "/src/project", Message: "approve Bash: go test ./..."})
	}
	for r := range 30 {
		sb.screen = append(sb.screen, []term.Run{{Text: fmt.Sprintf("● line %d ", r), FG: "#d4a72c", Bold: true}, {Text: "of the transcript with some text to fill the width"}})
	}
	return sb
}

// BenchmarkPublish is one state built for the board's clients, whole and
// as the change from the one before, at 20 and at 1,000 panes: the
// daemon's work every half second while a board is open.
func BenchmarkPublish(b *testing.B) {
	for _, n := range []int{20, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := &Server{b: newScreenBackend(n), feed: newFeed()}
			s.publish()
			full, _, _ := s.feed.next(0)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				s.publish()
			}
			b.ReportMetric(float64(len(full)), "full-bytes")
		})
		// The baseline: every card encoded again into one whole state, as
		// the board did before it sent changes.
		b.Run(fmt.Sprint("whole/", n), func(b *testing.B) {
			s := &Server{b: newScreenBackend(n), feed: newFeed()}
			b.ReportAllocs()
			for range b.N {
				json.Marshal(map[string]any{"type": "state", "panes": s.cards()})
			}
		})
	}
}
