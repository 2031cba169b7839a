package pane

import (
	"os"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/holder"
	"github.com/corral-dev/corral/internal/proctest"
)

// A pane blocked on a prompt whose message came from the agent's hook (as
// Gemini CLI's "Tool Confirm Shell Command requires execution", live) must
// keep that message and the time it got blocked when the next daemon
// adopts it: the hook is not said again, and nothing about the prompt
// changed. Live with Gemini CLI 0.61.0, `corral ls` showed the screen
// rule's "Allow execution of [Shell]?" after a kill -9 of the daemon, with
// no event for the change, and "FOR 0s".
func TestAdoptKeepsHookMessageAndSince(t *testing.T) {
	t.Parallel()
	h := holding(t, "h3")
	cfg := Config{ID: "h3", Argv: []string{os.Args[0]}, Env: []string{"CORRAL_FAKE_AGENT=1"}, Cols: 80, Rows: 24,
		Rules: ruleSet(t), Agent: "claude-code", Sweep: 200 * time.Millisecond, Holder: h}
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, p)
	awaitScreen(t, p, "? for shortcuts")
	// The hook tells of the prompt before the screen shows it, as live.
	const msg = "Tool Confirm Shell Command requires execution"
	p.ApplyHook(detect.Hook{State: combine.Blocked, Kind: "permission", Message: msg})
	await(t, p, "blocked by the hook", inState(combine.Blocked))
	if err := p.Input([]byte("ask\r"), false); err != nil {
		t.Fatal(err)
	}
	// Both the screen rule and the hook say blocked, as live.
	await(t, p, "blocked by the screen with the hook's message", func(in Info) bool {
		d := in.Decision
		return d.State == combine.Blocked && d.Source == combine.SourceScreen && d.Message == msg
	})
	before, hooks := p.Info(), p.Standing()
	if !p.Detach() {
		t.Fatal("not detached")
	}
	detached := time.Now()
	hc, err := holder.Dial(h.Socket, h.Secret, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	cfg.OnChange = rec.add
	q, err := Adopt(cfg, hc, Adopted{Last: before.Decision, Since: before.Since, Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, q)
	// The adopted pane's screen is classified within its sweep.
	var after Info
	proctest.WaitFor(2*time.Second, func() bool { after = q.Info(); return after.Decision.State == combine.Blocked })
	if after.Decision.State != combine.Blocked || after.Decision.Kind != "permission" || after.Decision.Message != msg {
		t.Errorf("adopted: %+v; want blocked/permission %q as before", after.Decision, msg)
	}
	if after.Since.After(detached) {
		t.Errorf("adopted: blocked since %v, after the detach (%v); it was blocked since %v",
			after.Since.Format(time.StampMilli), detached.Format(time.StampMilli), before.Since.Format(time.StampMilli))
	}
}
