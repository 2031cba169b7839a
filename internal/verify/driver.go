package verify

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/lab/mockmodel"
	"github.com/corral-dev/corral/internal/rules"
)

// StepRun is one step as it ran; times are seconds from the pane's start.
type StepRun struct {
	Name   string  `json:"step"`
	Action string  `json:"action"`
	Want   Want    `json:"want"`
	Start  float64 `json:"start"`
	// Truth is when the agent entered the wanted state: its own report's
	// time (TruthSource osc7501), or the action's (phase).
	Truth       float64 `json:"truth"`
	TruthSource string  `json:"truth_source"`
	End         float64 `json:"end"`
	// Reached says the agent got there before the step's deadline.
	Reached bool `json:"reached"`
	// Right says corral was right live (set once judged).
	Right bool `json:"right"`
}

type driver struct {
	o     Options
	d     *daemon
	pane  string
	cap   *capture
	model *mockmodel.Server
	work  string
}

func secs(d time.Duration) float64 { return d.Seconds() }

// keys resolves a scenario key for the agent: the profile's own, else
// its manifest's answers; interrupt is Esc.
func (dr *driver) keys(k Key) string {
	p := dr.o.Profile
	if s := p.Keys[k]; s != "" {
		return s
	}
	var answers map[string]string
	if dr.o.Rules != nil {
		if m, ok := dr.o.Rules.ByName(p.Rules); ok {
			answers = m.Answers
		}
	}
	switch k {
	case KeyYes:
		return answers[rules.AnswerYes]
	case KeyNo:
		if s := answers[rules.AnswerNo]; s != "" {
			return s
		}
		return "\x1b"
	case KeyOption:
		if s := answers[rules.AnswerOption]; s != "" {
			return strings.ReplaceAll(s, "{n}", "1")
		}
		return "1"
	case KeyInterrupt:
		return "\x1b"
	}
	return ""
}

func (dr *driver) send(ctx context.Context, text string, enter bool) error {
	dr.cap.input(time.Now(), text)
	err := dr.d.c.Do(ctx, "POST", "/v1/panes/"+dr.pane+"/send", api.SendRequest{Text: text, Enter: enter, Force: true}, nil)
	if err != nil {
		return fmt.Errorf("type into the pane: %w", err)
	}
	if enter {
		dr.cap.input(time.Now(), "\r")
	}
	return nil
}

// answer answers the pane's prompt through corral, as `corral answer` does.
func (dr *driver) answer(ctx context.Context, choice string) error {
	var res api.AnswerResult
	err := dr.d.c.Do(ctx, "POST", "/v1/panes/"+dr.pane+"/answer", api.AnswerRequest{Choice: choice}, &res)
	if err != nil {
		return fmt.Errorf("answer %s: %w", choice, err)
	}
	dr.cap.input(time.Now(), res.Keys)
	return nil
}

// drive runs the steps one after another. It never waits on corral's
// answer where the agent reports for itself: the agent's own report paces
// the scenario then; otherwise corral's state (or the deadline) does.
func (dr *driver) drive(ctx context.Context, steps []Step) ([]StepRun, error) {
	p := dr.o.Profile
	var runs []StepRun
	for _, s := range steps {
		start := time.Now()
		run := StepRun{Name: s.Name, Action: s.describe(), Want: s.Want, Start: secs(dr.cap.since(start))}
		switch {
		case s.Turn != "":
			text, _ := p.turnText(s, dr.work)
			run.Action = fmt.Sprintf("type %q", text)
			if err := dr.submit(ctx, text); err != nil {
				return nil, err
			}
		case s.Key == KeyNo && p.Keys[KeyNo] == "":
			// A refusal goes the way a person's does: corral answer no.
			if err := dr.answer(ctx, rules.AnswerNo); err != nil {
				// corral does not see the prompt: the step is wrong, but
				// the agent may well be asking, so its no keys go in as a
				// person would press them and the run goes on.
				if dr.o.Log != nil {
					fmt.Fprintf(dr.o.Log, "%-16s corral answer no failed (%v): pressing the keys\n", s.Name, err)
				}
				if err := dr.send(ctx, dr.keys(KeyNo), false); err != nil {
					return nil, err
				}
			}
		case s.Key != KeyNone:
			for i, k := range strings.Split(dr.keys(s.Key), pause) {
				if i > 0 {
					if err := sleepCtx(ctx, 300*time.Millisecond); err != nil {
						return nil, err
					}
				}
				if err := dr.send(ctx, k, false); err != nil {
					return nil, err
				}
			}
		}
		from := dr.cap.since(start)
		deadline := start.Add(s.Deadline)
		answered := map[string]bool{}
		for !dr.reached(s, from) {
			if s.Name == "startup" {
				for text, keys := range p.Prelude {
					if !answered[text] && dr.cap.screenHas(text) {
						answered[text] = true
						if err := dr.send(ctx, keys, false); err != nil {
							return nil, err
						}
						from = dr.cap.since(time.Now())
					}
				}
			}
			if time.Now().After(deadline) {
				break
			}
			if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
				return nil, err
			}
		}
		run.Reached = time.Now().Before(deadline)
		if run.Reached {
			if err := sleepCtx(ctx, dr.o.Settle+s.Hold); err != nil {
				return nil, err
			}
		}
		run.End = secs(dr.cap.since(time.Now()))
		runs = append(runs, run)
		// The daemon's event times have millisecond precision: keep the
		// next action clear of this step's end.
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return nil, err
		}
		if dr.o.Log != nil {
			live := dr.cap.liveState()
			fmt.Fprintf(dr.o.Log, "%-16s %-36s want %-19s corral %s (%s)\n", s.Name, clipText(run.Action, 36), s.Want, wantOf(live), live.Source)
		}
	}
	return runs, nil
}

// submit types a turn and Enter. Some agents drop an Enter that comes
// while they start up: with a scripted model, Enter is pressed again
// until the model hears from the agent.
func (dr *driver) submit(ctx context.Context, text string) error {
	before := int64(0)
	if dr.model != nil {
		before = dr.model.Requests.Load()
	}
	if err := dr.send(ctx, text, true); err != nil {
		return err
	}
	if dr.model == nil {
		return nil
	}
	for try := 0; try < 5; try++ {
		wait := time.Now().Add(3 * time.Second)
		for time.Now().Before(wait) {
			if dr.model.Requests.Load() > before {
				return nil
			}
			if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
				return err
			}
		}
		if err := dr.send(ctx, "\r", false); err != nil {
			return err
		}
	}
	return nil
}

// reached says whether a step's state has come: by the agent's own
// report when it gives them, else by corral's state.
func (dr *driver) reached(s Step, from time.Duration) bool {
	p := dr.o.Profile
	if s.Name == "startup" && p.Ready != "" && !dr.cap.screenHas(p.Ready) {
		return false
	}
	live := dr.cap.liveState()
	if p.Reports && dr.cap.reported() {
		if r, ok := dr.cap.lastReport(from); ok && s.Want.Matches(r.State, r.Kind) {
			return true
		}
		// An agent may say nothing at some step: corral's state paces it
		// then, once it has held a while.
		return s.Want.Matches(live.State, live.Kind) && dr.cap.since(time.Now())-max(live.At, from) >= quietReport
	}
	return s.Want.Matches(live.State, live.Kind)
}

// quietReport is how long corral's state must hold to pace a step that
// the reporting agent says nothing about.
const quietReport = 5 * time.Second

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func wantOf(p Point) Want { return Want{State: p.State, Kind: p.Kind} }

func clipText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
