package verify

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/combine"
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
	// Fault says why corral was wrong live whatever its state at the
	// step's end: it read idle before the agent's ready screen, or the
	// first turn, typed the moment corral read idle, never reached the
	// model.
	Fault string `json:"fault,omitempty"`
}

type driver struct {
	o     Options
	d     *daemon
	pane  string
	cap   *capture
	model *mockmodel.Server
	work  string
	// fresh: the agent has just been read ready, and the next turn is
	// its first.
	fresh bool
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
	return dr.sendAs(ctx, text, enter, true)
}

// sendAs types as corral send does; force skips its guard, its wait for a
// starting agent, and its check that the Enter was taken.
func (dr *driver) sendAs(ctx context.Context, text string, enter, force bool) error {
	dr.cap.input(time.Now(), text)
	err := dr.d.c.Do(ctx, "POST", "/v1/panes/"+dr.pane+"/send", api.SendRequest{Text: text, Enter: enter, Force: force}, nil)
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
		// pressed is when the step's last key went to corral: the agent
		// can react (and corral with it) before the request returns.
		var pressed time.Time
		run := StepRun{Name: s.Name, Action: s.describe(), Want: s.Want, Start: secs(dr.cap.since(start))}
		switch {
		case s.Turn != "":
			text, _ := p.turnText(s, dr.work)
			run.Action = fmt.Sprintf("type %q", text)
			if dr.fresh {
				dr.fresh = false
				fault, err := dr.submitFirst(ctx, text)
				if err != nil {
					return nil, err
				}
				run.Fault = fault
			} else if err := dr.submit(ctx, text); err != nil {
				return nil, err
			}
		case s.Answer != "":
			pressed = time.Now()
			if err := dr.answer(ctx, s.Answer); err != nil {
				// A person would be stuck here too: the step is wrong,
				// and so will the next be, the agent still asking.
				run.Fault = fmt.Sprintf("corral answer %s failed: %v", s.Answer, err)
				if dr.o.Log != nil {
					fmt.Fprintf(dr.o.Log, "%-16s %s\n", s.Name, run.Fault)
				}
			}
		case s.Key == KeyNo && p.Keys[KeyNo] == "":
			// A refusal goes the way a person's does: corral answer no.
			pressed = time.Now()
			if err := dr.answer(ctx, rules.AnswerNo); err != nil {
				// corral does not see the prompt: the step is wrong, but
				// the agent may well be asking, so its no keys go in as a
				// person would press them and the run goes on.
				if dr.o.Log != nil {
					fmt.Fprintf(dr.o.Log, "%-16s corral answer no failed (%v): pressing the keys\n", s.Name, err)
				}
				pressed = time.Now()
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
				pressed = time.Now()
				if err := dr.send(ctx, k, false); err != nil {
					return nil, err
				}
			}
		}
		from := dr.cap.since(start)
		typed := dr.cap.since(time.Now())
		if !pressed.IsZero() {
			typed = dr.cap.since(pressed)
		}
		deadline := start.Add(s.Deadline)
		if s.At > 0 {
			if err := sleepCtx(ctx, time.Until(start.Add(s.At))); err != nil {
				return nil, err
			}
			deadline = time.Now()
		}
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
		run.Reached = time.Now().Before(deadline) || (s.At > 0 && dr.reached(s, from))
		if s.Within > 0 && run.Fault == "" {
			run.Fault = dr.late(s, typed)
		}
		if s.Name == "startup" {
			// A script types its task the moment corral reads idle: so
			// does the first turn.
			run.Fault = dr.earlyIdle()
			dr.fresh = run.Reached
		} else if run.Reached && s.At == 0 {
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

// submitFirst types the first turn and Enter once, as a script does
// after corral wait --state idle: an agent that was not ready drops the
// Enter, and the fault says so. Enter is then pressed again, so that the
// run goes on.
func (dr *driver) submitFirst(ctx context.Context, text string) (string, error) {
	// As a script would: corral send TEXT --enter, unforced.
	if err := dr.sendAs(ctx, text, true, false); err != nil {
		return fmt.Sprintf("corral send refused the first turn: %v", err), dr.submit(ctx, "")
	}
	if dr.model == nil {
		return "", nil
	}
	wait := time.Now().Add(firstHeard)
	for !dr.model.Heard(text) {
		if time.Now().After(wait) {
			return fmt.Sprintf("the first turn, typed when corral first read idle, did not reach the model within %v: "+
				"the agent was not ready for it", firstHeard), dr.submit(ctx, "")
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return "", err
		}
	}
	return "", nil
}

// late says whether corral came to a step's state later than its Within,
// counted from the moment its action was typed.
func (dr *driver) late(s Step, typed time.Duration) string {
	for _, pt := range dr.cap.liveSince(typed) {
		if s.Want.Matches(pt.State, pt.Kind) {
			if d := pt.At - typed; d > s.Within {
				return fmt.Sprintf("corral read %s %.2fs after the %s; it must within %v", s.Want, d.Seconds(), s.describe(), s.Within)
			}
			return ""
		}
	}
	return fmt.Sprintf("corral never read %s after the %s", s.Want, s.describe())
}

// firstHeard bounds the wait for the model to hear the first turn.
const firstHeard = 10 * time.Second

// earlyIdle says whether corral read the fresh agent idle before its
// ready text was on screen.
func (dr *driver) earlyIdle() string {
	p := dr.o.Profile
	if p.Ready == "" {
		return ""
	}
	ready, seen := dr.cap.readySince()
	now := dr.cap.since(time.Now())
	for _, pt := range dr.cap.liveBefore(now) {
		if pt.State == combine.Idle && (!seen || pt.At < ready) {
			if !seen {
				return fmt.Sprintf("corral read idle at %.2fs, and %q was never on screen", pt.At.Seconds(), p.Ready)
			}
			return fmt.Sprintf("corral read idle at %.2fs, before the agent's ready screen (%q at %.2fs)", pt.At.Seconds(), p.Ready, ready.Seconds())
		}
	}
	return ""
}

// reached says whether a step's state has come: by the agent's own
// report when it gives them, else by corral's state. A fresh agent is
// ready when corral says so: that is what a script waits for.
func (dr *driver) reached(s Step, from time.Duration) bool {
	p := dr.o.Profile
	if s.Name == "startup" {
		live := dr.cap.liveState()
		return s.Want.Matches(live.State, live.Kind) && len(dr.cap.liveBefore(dr.cap.since(time.Now())+time.Second)) > 0
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
