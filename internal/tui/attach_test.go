package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/api"
)

// What corral attach printed last becomes the board's status line.
func TestLastLine(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"nothing", nil, ""},
		{"detached", []string{"\r\n[detached from b:fp]\r\n"}, "detached from b:fp"},
		{"an error without a newline", []string{"corral: attach b:fp: host b did not answer in time"}, "corral: attach b:fp: host b did not answer in time"},
		{"split across writes", []string{"\r\n[the pane ended", " the session from x]", "\r\n"}, "the pane ended the session from x"},
		{"the last of several", []string{"first\nsecond\n\n"}, "second"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l lastLine
			for _, w := range tc.writes {
				if n, err := l.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write: %d, %v", n, err)
				}
			}
			if got := l.String(); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// A pane of an unreachable host is not attached: the status says why.
func TestAttachUnreachableHost(t *testing.T) {
	board := New(nil, "/nonexistent/corral")
	now := time.Now().UTC().Format(time.RFC3339Nano)
	board.fleet = &fleetInfo{self: "laptop", hosts: []fleetHost{{Host: "laptop", Reachable: true}, {Host: "vm1"}}}
	board.panes = []api.Pane{{ID: "vm1:aaaaa", Host: "vm1", State: "idle", Since: now, Unreachable: true}}
	board.sel = "vm1:aaaaa"
	if cmd := board.attach(); cmd != nil {
		t.Fatal("attach ran for an unreachable host's pane")
	}
	if !strings.Contains(board.status, "host vm1 is unreachable") {
		t.Fatalf("status %q", board.status)
	}
	board.panes[0].Unreachable = false
	if cmd := board.attach(); cmd == nil {
		t.Fatal("no attach for a reachable host's pane")
	}
}
