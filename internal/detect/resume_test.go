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

// A re-adopted pane's program redraws its screen (SIGWINCH): a frame of
// that redraw caught half drawn does not end a hook's report the replayed
// screen agreed with, while one the replay had outlived stays ended.
func TestHookSurvivesTheRedrawAfterAdoption(t *testing.T) {
	const hookMsg = "Tool Confirm Shell Command requires execution"
	prompt := "\x1b[2J\x1b[HAllow running ls?\r\n"
	idle := "\x1b[2J\x1b[H? for shortcuts\r\n"
	standing := Standing{State: combine.Blocked, Kind: "permission", Message: hookMsg, At: at(100)}
	for _, c := range []struct {
		name      string
		replayed  string
		renew     bool
		wantStand bool // the hook's report still stands after the redraw
	}{
		{"the hook kept through the redraw", prompt, true, true},
		{"without a fresh grace the half frame ends it", prompt, false, false},
		{"answered meanwhile: the hook stays ended", idle, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, _ := newToy(t)
			e.Feed(at(4000), []byte(c.replayed))
			now := at(5000)
			e.RestoreStanding(standing, now)
			e.Classify(now)
			if c.renew {
				e.HookSurvivedReplay(now)
			}
			// The redraw: the input box first, then the dialog.
			e.Feed(at(5050), []byte(idle))
			e.Classify(at(5200))
			e.Feed(at(5250), []byte(prompt))
			e.Classify(at(5400))
			if d, _ := e.Decision(); d.State != combine.Blocked || c.wantStand && d.Message != hookMsg {
				t.Errorf("after the redraw: %+v, want blocked with the hook's words", d)
			}
			if s := e.Standing(); (s.State == combine.Blocked) != c.wantStand {
				t.Errorf("the hook's report after the redraw: %+v, want standing %v", s, c.wantStand)
			}
		})
	}
}
