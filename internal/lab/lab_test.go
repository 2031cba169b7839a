package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	rulesdata "github.com/corral-dev/corral/agents"
	"github.com/corral-dev/corral/internal/lab/fakeagent"
	"github.com/corral-dev/corral/internal/proctest"
	"github.com/corral-dev/corral/internal/rules"
)

func TestMain(m *testing.M) {
	if os.Getenv("CORRAL_FAKE_AGENT") == "1" {
		os.Exit(fakeagent.Main(os.Args[1:]))
	}
	// The lab runs wait on the fake agent's and the user bot's pace, not on
	// a core: all four at once.
	proctest.MoreParallel(2)
	os.Exit(m.Run())
}

// A short lab run: corral's live detector catches every prompt and never
// says "waiting" when the agent is not. Four runs of one task at once
// rather than one of eight, with a quick user bot: the lab's time is the
// agent's and the user bot's pace, not the machine's. Each of these seeds
// has a prompt in its first task (4 in all), and each run ends within
// about 8 s. Of seeds 1–24, 15 have a prompt in their first task, and
// these four end first; seeds 2, 3, 6 and 11 with two tasks each took up
// to 13 s.
func TestLabShort(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 8 s; runs without -short")
	}
	set, errs := rules.Loader{Embedded: rulesdata.Rules}.Load(nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, seed := range []int64{2, 16, 20, 22} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			scores, err := Run(ctx, Options{Seed: seed, Tasks: 1, OSC7501: true, Quick: true, Agent: []string{os.Args[0]}, Env: []string{"CORRAL_FAKE_AGENT=1"}, Rules: set})
			if err != nil {
				t.Fatal(err)
			}
			var table bytes.Buffer
			Table(&table, scores)
			t.Log("\n" + table.String())
			byName := map[string]Score{}
			for _, s := range scores {
				byName[s.Detector] = s
			}
			c := byName["corral"]
			if c.Prompts == 0 {
				t.Fatal("the task script had no prompt; pick another seed")
			}
			if c.Caught != c.Prompts || c.FalseWaiting.Count != 0 {
				t.Fatalf("corral: caught %d of %d prompts, %d false waits", c.Caught, c.Prompts, c.FalseWaiting.Count)
			}
			if len(scores) != len(Detectors) {
				t.Fatalf("%d detectors scored, want %d", len(scores), len(Detectors))
			}
		})
	}
}
