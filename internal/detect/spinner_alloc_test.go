package detect

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	rulesdata "github.com/corral-dev/corral/agents"
	"github.com/corral-dev/corral/internal/rules"
	"github.com/corral-dev/corral/internal/status"
)

// raceBuild is set in a build with the race detector (race_test.go).
var raceBuild bool

// agentRules are the manifests of the agents' folders, as the daemon
// embeds them.
func agentRules(tb testing.TB) *rules.Set {
	tb.Helper()
	set, errs := rules.Loader{Embedded: rulesdata.RulesView{Agents: os.DirFS("../../agents")}}.Load(nil)
	if len(errs) > 0 {
		tb.Fatal(errs)
	}
	return set
}

// A pane whose program no manifest names, drawing a spinner (the scale
// benchmark's pane): each frame is fed and classified. What a frame
// allocates is garbage the daemon collects at 600 frames a second for 300
// panes; the screen's copy and the identification's join of its rows come
// from pools, the generic manifest's bottom row is the row itself, and what
// is left is the new text of the row the frame drew (5 before).
func TestSpinnerFrameGarbage(t *testing.T) {
	if raceBuild {
		t.Skip("the race detector's instrumentation allocates")
	}
	set := agentRules(t)
	e := New(Config{Cols: 80, Rows: 24, Rules: set})
	defer e.Close()
	now := time.Unix(0, 0)
	for i := 1; i <= 200; i++ {
		e.Feed(now, fmt.Appendf(nil, "line %d of the scrollback\r\n", i))
	}
	e.Classify(now)
	frames := make([][]byte, 64)
	for i := range frames {
		frames[i] = fmt.Appendf(nil, "\r\x1b[K%c working (%d)", "|/-\\"[i%4], i)
	}
	i := 0
	n := testing.AllocsPerRun(200, func() {
		now = now.Add(500 * time.Millisecond)
		e.Feed(now, frames[i%len(frames)])
		e.Classify(now)
		i++
	})
	if n > 1 {
		t.Fatalf("a spinner frame fed and classified allocates %.0f times, want at most 1 (the row's text)", n)
	}
}

// An engine keeps no buffer of events or changes between them: a pane
// keeps its engine for its life, and changes are rare next to its output.
// The changes returned are the caller's own.
func TestEngineKeepsNoBuffersBetweenChanges(t *testing.T) {
	set := agentRules(t)
	e := New(Config{Cols: 80, Rows: 24, Rules: set})
	defer e.Close()
	now := time.Unix(0, 0)
	var got []Change
	for i, st := range []status.State{status.Working, status.Blocked, status.Working} {
		now = now.Add(time.Second)
		got = append(got, e.Feed(now, []byte(status.Report{State: st, Progress: status.NoProgress, Msg: fmt.Sprint("step ", i)}.Encode()))...)
		got = append(got, e.Classify(now)...)
		if cap(e.pending) != 0 || cap(e.changes) != 0 {
			t.Fatalf("after report %d the engine keeps room for %d events and %d changes", i, cap(e.pending), cap(e.changes))
		}
	}
	var states []string
	for _, c := range got {
		states = append(states, string(c.Decision.State))
	}
	if s := strings.Join(states, " "); s != "working blocked working" {
		t.Fatalf("changes %s, want working blocked working", s)
	}
}
