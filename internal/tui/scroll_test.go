package tui

import (
	"strings"
	"testing"
)

// At 1,000 panes the list shows a screenful around the selection: the
// paging keys move by a screen, Home and End to the ends, and a filter
// typed after / narrows the list and keeps a visible pane selected.
func TestScrollAndFilterAtAThousand(t *testing.T) {
	board := boardOf(1000)
	board.sel = board.panes[0].ID
	lines := func() int { return strings.Count(board.View().Content, "\n") + 1 }
	if n := lines(); n > board.height {
		t.Fatalf("the view has %d lines on a %d-line screen", n, board.height)
	}
	page := board.listRows() - 1
	for _, c := range []struct {
		key  string
		want int // the selection's index afterwards
	}{
		{"pgdown", page}, {"pgdown", 2 * page}, {"pgup", page}, {"j", page + 1}, {"k", page}, {"end", 999}, {"pgdown", 999}, {"home", 0}, {"pgup", 0},
	} {
		board.key(c.key)
		if got := board.index(board.sel); got != c.want {
			t.Fatalf("after %s the selection is at %d, want %d", c.key, got, c.want)
		}
		out := board.View().Content
		if !strings.Contains(out, "▸ "+board.sel) {
			t.Fatalf("after %s the selected pane %s is not on screen:\n%s", c.key, board.sel, out)
		}
		if n := lines(); n > board.height {
			t.Fatalf("after %s the view has %d lines on a %d-line screen", c.key, n, board.height)
		}
	}
	board.key("end")
	for _, k := range []string{"/", "a", "g", "e", "n", "t", "-", "7", "7", "7", "enter"} {
		board.key(k)
	}
	if v := board.visible(); len(v) != 1 || v[0].Name != "agent-777" || board.sel != v[0].ID {
		t.Fatalf("filter agent-777: %d panes, selection %s", len(v), board.sel)
	}
	board.key("esc")
	if len(board.visible()) != 1000 {
		t.Fatalf("Esc left %d panes listed", len(board.visible()))
	}
}

// Only the refresh loop's reads schedule the next read; a read after a
// key does not start another loop.
func TestOneRefreshLoop(t *testing.T) {
	board := boardOf(20)
	if _, cmd := board.Update(panesMsg{panes: board.panes}); cmd != nil {
		t.Error("a read after a key scheduled another read")
	}
	if _, cmd := board.Update(panesMsg{tick: true, panes: board.panes}); cmd == nil {
		t.Error("the refresh loop stopped")
	}
}
