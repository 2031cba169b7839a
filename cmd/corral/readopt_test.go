package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A daemon killed while Claude Code is blocked: the re-adopted pane says
// what it said (the hook's words, not the screen's), and adds no event.
func readoptedBlockKeepsItsWords(t *testing.T) {
	// Apart from the crowd (TestApart): under the whole suite's load the re-adopted pane
	// read Source screen instead of hook twice in about eight runs (its
	// words and state kept). One way that happens, a half-drawn frame of
	// the redraw after re-adoption ending the hook's report, is closed
	// (detect's TestHookSurvivesTheRedrawAfterAdoption); the flake was not
	// reproduced alone (12 at once, before and after).
	e := newEnv(t)
	claude := fakeClaude(t, e)
	e.must("run", "--name", "cc", "--", claude)
	e.must("send", "cc", "ask", "--enter")
	e.must("wait", "cc", "--state", "blocked", "--timeout", "20s")
	waitFor(t, 10*time.Second, "the hook's words", func() bool { return strings.HasPrefix(e.pane("cc").Message, "approve ") })
	before := e.pane("cc")
	evs := len(e.events())
	// The row is written a moment after each change: wait for the one
	// that keeps the standing hook too, not only its words.
	waitFor(t, 10*time.Second, "the pane table", func() bool {
		b := tableText(filepath.Join(e.dir, "state"))
		return strings.Contains(b, `"state":"blocked"`) && strings.Contains(b, before.Message) && strings.Contains(b, `"hooks":{`)
	})
	syscall.Kill(daemonPID(t, e), syscall.SIGKILL)
	after := e.pane("cc")
	if after.State != before.State || after.Kind != before.Kind || after.Message != before.Message || after.Source != before.Source {
		t.Fatalf("re-adopted:\n before %+v\n after  %+v", before, after)
	}
	if n := len(e.events()); n != evs {
		t.Fatalf("re-adoption added %d events: %+v", n-evs, e.events())
	}
	// The answer is one change, blocked → working or done: no blocked → blocked.
	e.must("answer", "cc", "yes")
	e.must("wait", "cc", "--state", "done,idle", "--timeout", "20s")
	for _, ev := range e.events()[evs:] {
		if ev.State == "blocked" {
			t.Fatalf("a blocked event after re-adoption: %+v", e.events()[evs:])
		}
	}
}
