package detect

import (
	"testing"

	"github.com/corral-dev/corral/internal/combine"
)

// A fresh engine given what the previous one knew (its hooks' standing
// report, its last decision and since) decides as the previous one would
// have, and never holds on to what the screen contradicts.
func TestResumeAfterAdoption(t *testing.T) {
	const hookMsg = "Tool Confirm Shell Command requires execution"
	prompt := "\x1b[2J\x1b[HAllow running ls?\r\n"
	idle := "\x1b[2J\x1b[H? for shortcuts\r\n"
	blockedByHook := combine.Decision{State: combine.Blocked, Kind: "permission", Message: hookMsg, Source: combine.SourceScreen, Rule: "prompt"}
	for _, c := range []struct {
		name   string
		screen string
		hooks  Standing
		last   combine.Decision
		since  int // ms
		want   combine.Decision
		wantAt int // ms: when the state began (-1: as a fresh engine, never)
	}{
		{"the hook's words and since, the hook restored", prompt,
			Standing{State: combine.Blocked, Kind: "permission", Message: hookMsg, At: at(100), Conversation: "c1"},
			blockedByHook, 200, combine.Decision{State: combine.Blocked, Kind: "permission", Message: hookMsg}, 200},
		{"the words kept with no hook standing", prompt, Standing{}, blockedByHook, 200,
			combine.Decision{State: combine.Blocked, Kind: "permission", Message: hookMsg}, 200},
		{"the screen answered the prompt meanwhile", idle,
			Standing{State: combine.Blocked, Kind: "permission", Message: hookMsg, At: at(100)},
			blockedByHook, 200, combine.Decision{State: combine.Idle}, -1},
		{"another state: no since carried over", idle, Standing{}, blockedByHook, 200,
			combine.Decision{State: combine.Idle}, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, _ := newToy(t)
			e.Feed(at(4000), []byte(c.screen))
			now := at(5000)
			e.RestoreStanding(c.hooks, now)
			e.Classify(now)
			e.Resume(c.last, at(c.since))
			d, since := e.Decision()
			if d.State != c.want.State || d.Kind != c.want.Kind || d.Message != c.want.Message && c.want.Message != "" {
				t.Errorf("decision %+v, want %+v", d, c.want)
			}
			if c.wantAt < 0 && !since.IsZero() || c.wantAt >= 0 && !since.Equal(at(c.wantAt)) {
				t.Errorf("since %v, want %v", since.Sub(t0), at(c.wantAt).Sub(t0))
			}
			if s := e.Standing(); c.hooks.Conversation != "" && s.Conversation != c.hooks.Conversation {
				t.Errorf("conversation %q, want %q", s.Conversation, c.hooks.Conversation)
			}
		})
	}
}
