package verify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/detect"
)

// probeDir holds live runs of TestProbeInterrupts kept because they once
// showed an interrupt leaving working late.
const probeDir = "../../testdata/live/probe"

// stoppedText is what an agent prints when it has stopped a turn: the
// agent's own stop time is the first output holding it after the key.
var stoppedText = map[string]string{"qwen-code": "Request cancelled."}

// TestInterruptRecordingsLeaveWorking replays each kept interrupt probe in
// every mode: every interrupt ends working within a second of the key, or
// within 300 ms of the agent's own word that it stopped when that came
// later. Qwen Code, interrupted while it set up a tool call, said "Request
// cancelled." 0.35 s or 1.64 s after the Esc, and left its spinner (frozen)
// on screen 2.1 s more.
func TestInterruptRecordingsLeaveWorking(t *testing.T) {
	dirs, err := os.ReadDir(probeDir)
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no recordings under %s: %v", probeDir, err)
	}
	set := ruleSet(t)
	modes := map[string]detect.Signals{
		"screen":       detect.SignalScreen,
		"hooks+screen": detect.SignalScreen | detect.SignalHooks,
		"all":          detect.AllSignals,
	}
	for _, d := range dirs {
		rec, err := Load(filepath.Join(probeDir, d.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for mode, signals := range modes {
			tl := Replay(rec, set, signals)
			n := 0
			for _, st := range rec.Steps {
				if st.Name != "interrupt" {
					continue
				}
				n++
				at := time.Duration(st.Start * float64(time.Second))
				leave, to := leaveIn(tl, at)
				limit := time.Second
				if stopped := agentStopped(rec, at); stopped >= 0 && stopped+300*time.Millisecond > limit {
					limit = stopped + 300*time.Millisecond
				}
				if leave < 0 || leave > limit {
					t.Errorf("%s, %s: the interrupt at %.2fs: %s (limit %v)", d.Name(), mode, st.Start, leaveText(leave, to), limit)
				}
			}
			if n == 0 {
				t.Fatalf("%s: no interrupt step", d.Name())
			}
		}
	}
}

// agentStopped is how long after at the agent first printed its stoppedText
// (negative: never, or the agent has none).
func agentStopped(rec *Recording, at time.Duration) time.Duration {
	text, ok := stoppedText[rec.Agent]
	if !ok {
		return -1
	}
	for _, ev := range rec.Cast.Events {
		if ev.At >= at && ev.Code == "o" && strings.Contains(ev.Data, text) {
			return ev.At - at
		}
	}
	return -1
}
