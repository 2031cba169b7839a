package verify

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
)

// A task typed into a waiting agent reads working from its Enter on:
// never idle (or done) in between while the agent is still taking it up.
// Replayed over every live recording, with every signal.
func TestTaskNeverReadsIdleBeforeItShows(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(liveDir, "*", "run.json"))
	set := ruleSet(t)
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			rec, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			points := Replay(rec, set, detect.AllSignals)
			for _, s := range rec.Steps {
				if !strings.HasPrefix(s.Action, "type ") || s.Name == "startup" {
					continue
				}
				// The Enter follows the text by ~70 ms; then the quiet window.
				from := dur(s.Start) + 250*time.Millisecond
				// The first change after the step began is to work (or a
				// prompt), and it comes at once.
				var first *Point
				for i := range points {
					if points[i].At > dur(s.Start) {
						first = &points[i]
						break
					}
				}
				switch {
				case first == nil:
					t.Errorf("%s: nothing after the task was typed", s.Name)
				case first.State != combine.Working && first.State != combine.Blocked:
					t.Errorf("%s: %s after the task was typed (%+v)", s.Name, first.State, *first)
				case first.At > from:
					t.Errorf("%s: %s only %.2fs after the task was typed", s.Name, first.State, (first.At - dur(s.Start)).Seconds())
				}
			}
		})
	}
}
