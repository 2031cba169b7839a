package rules_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	rulesdata "github.com/corral-dev/corral/agents"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/replay"
	"github.com/corral-dev/corral/internal/rules"
)

// Each live recording, replayed through the whole engine on the screen
// rules alone, is in each phase's state at that phase's marker.
func TestLiveRecordingsAtMarkers(t *testing.T) {
	set, errs := rules.Loader{Embedded: rulesdata.Rules}.Load(nil)
	if len(errs) > 0 {
		t.Fatalf("embedded rules: %v", errs)
	}
	for _, agent := range []string{"codex", "qwen-code", "opencode", "copilot"} {
		dir := filepath.Join("../../testdata/live", agent)
		data, err := os.ReadFile(filepath.Join(dir, "phases.json"))
		if err != nil {
			t.Fatal(err)
		}
		var phases []struct {
			Screen, Recording, Marker, Kind, Message string
			State                                    combine.State
		}
		if err := json.Unmarshal(data, &phases); err != nil {
			t.Fatal(err)
		}
		byRec := map[string][]int{}
		for i, p := range phases {
			byRec[p.Recording] = append(byRec[p.Recording], i)
		}
		for recName, idx := range byRec {
			raw, err := os.ReadFile(filepath.Join(dir, recName))
			if err != nil {
				t.Fatal(err)
			}
			rec, err := replay.Parse(raw, 120, 32)
			if err != nil {
				t.Fatalf("%s/%s: %v", agent, recName, err)
			}
			at := map[string]time.Duration{}
			for _, m := range rec.Markers() {
				at[m.Data] = m.At
			}
			var samples []time.Duration
			want := map[time.Duration]int{}
			for _, i := range idx {
				d, ok := at[phases[i].Marker]
				if !ok {
					t.Errorf("%s/%s: no marker %q", agent, recName, phases[i].Marker)
					continue
				}
				samples = append(samples, d)
				want[d] = i
			}
			sortDurations(samples)
			res := replay.Run(rec, replay.Options{Rules: set, Agent: agent, ScreenOnly: true, Samples: samples,
				OnSample: func(d time.Duration, e *detect.Engine) {
					p := phases[want[d]]
					got, _ := e.Decision()
					state := got.State
					if state == combine.Done {
						state = combine.Idle // a finished turn, on a screen
					}
					if state != p.State || got.Kind != p.Kind || got.Message != p.Message {
						t.Errorf("%s/%s at %q (%.2fs): %s/%s %q (rule %q), want %s/%s %q", agent, recName, p.Marker,
							d.Seconds(), got.State, got.Kind, got.Message, got.Rule, p.State, p.Kind, p.Message)
					}
				}})
			res.Close()
		}
	}
}

func sortDurations(d []time.Duration) {
	for i := 1; i < len(d); i++ {
		for j := i; j > 0 && d[j] < d[j-1]; j-- {
			d[j], d[j-1] = d[j-1], d[j]
		}
	}
}
