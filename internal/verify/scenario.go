// Package verify checks corral against a real agent CLI: it runs the agent
// in a daemon pane against a scripted model server on loopback, drives it
// through a scenario of turns (approvals, a question, a denial, an
// interrupt, prose, a slow tool), and judges corral's state at every step
// against the truth — the agent's own OSC 7501 reports where it gives
// them, the scenario's phase where it does not. The pane's output bytes
// and hook reports are recorded with their times and replayed through the
// engine once per signal, so each step is also scored with the screen
// rules alone, the hooks alone and the reports alone.
package verify

import (
	"fmt"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/lab/mockmodel"
)

// Key is a keystroke the scenario presses, resolved per agent.
type Key string

const (
	KeyNone      Key = ""
	KeyYes       Key = "yes"       // allow a permission prompt
	KeyNo        Key = "no"        // deny it (Esc or the agent's "no")
	KeyOption    Key = "option"    // pick the first option of a question
	KeyInterrupt Key = "interrupt" // interrupt a running turn
)

// Want is a state a step expects.
type Want struct {
	State combine.State `json:"state"`
	Kind  string        `json:"kind,omitempty"`
}

func (w Want) String() string {
	if w.Kind != "" {
		return string(w.State) + "/" + w.Kind
	}
	return string(w.State)
}

// Matches says whether a state and kind are what is wanted.
func (w Want) Matches(state combine.State, kind string) bool {
	return state == w.State && (w.State != combine.Blocked || kind == w.Kind)
}

// Step is one scenario step: an action (a turn typed, or a key pressed)
// and the state the agent is in once it has taken effect.
type Step struct {
	Name string
	// Turn is typed as "corral:TURN ARG" with Enter; the scripted model
	// server answers it (mockmodel.Step). ARG may hold {work}, the run's
	// working folder.
	Turn mockmodel.Step
	Arg  string
	Key  Key
	// Answer is answered through corral, as `corral answer ID ANSWER`
	// does (the API): the keys are those of the rule that reads the
	// prompt, so a wrong answer key fails the step.
	Answer string
	Want   Want
	// Hold keeps the step going this long after its state is reached
	// (a slow tool call must be running before it is interrupted).
	Hold time.Duration
	// Deadline bounds the wait for the state, from the action.
	Deadline time.Duration
	// At ends the step this long after its action, whatever the state,
	// and judges it then (the next action must land at that moment of a
	// turn).
	At time.Duration
	// Within: corral must read the wanted state this soon after the
	// action is typed, or the step is wrong.
	Within time.Duration
}

// Scenario is the default scenario. Each step's state differs from the
// state the previous step leaves, so a stale state is never scored right.
var Scenario = append([]Step{
	{Name: "startup", Want: Want{State: combine.Idle}, Deadline: 90 * time.Second},
	{Name: "shell", Turn: mockmodel.StepShell, Want: Want{combine.Blocked, "permission"}, Deadline: 60 * time.Second},
	{Name: "shell-yes", Key: KeyYes, Want: Want{State: combine.Done}, Deadline: 60 * time.Second},
	{Name: "edit", Turn: mockmodel.StepEdit, Arg: "{work}/notes.txt", Want: Want{combine.Blocked, "permission"}, Deadline: 60 * time.Second},
	{Name: "edit-yes", Key: KeyYes, Want: Want{State: combine.Done}, Deadline: 60 * time.Second},
	{Name: "question", Turn: mockmodel.StepQuestion, Want: Want{combine.Blocked, "question"}, Deadline: 60 * time.Second},
	{Name: "question-answer", Key: KeyOption, Want: Want{State: combine.Done}, Deadline: 60 * time.Second},
	{Name: "deny", Turn: mockmodel.StepShell, Want: Want{combine.Blocked, "permission"}, Deadline: 60 * time.Second},
	{Name: "deny-no", Key: KeyNo, Want: Want{State: combine.Idle}, Deadline: 30 * time.Second},
}, turnSteps...)

// AutoScenario is Claude Code in auto mode (its default) against the
// loopback model server, where auto mode's safety check cannot reach
// Anthropic: the first checked tool call opens a notice (a question:
// Enter stays in auto mode), then that call and each checked one after
// it asks in a menu without numbers (No first). A person answers both
// through corral. File writes in the working folder run unasked.
var AutoScenario = append([]Step{
	{Name: "startup", Want: Want{State: combine.Idle}, Deadline: 90 * time.Second},
	{Name: "notice", Turn: mockmodel.StepShell, Want: Want{combine.Blocked, "question"}, Deadline: 60 * time.Second},
	{Name: "notice-no", Answer: "no", Want: Want{State: combine.Idle}, Deadline: 30 * time.Second},
	{Name: "shell", Turn: mockmodel.StepShell, Want: Want{combine.Blocked, "question"}, Deadline: 60 * time.Second},
	{Name: "notice-stay", Answer: "yes", Want: Want{combine.Blocked, "permission"}, Deadline: 60 * time.Second},
	{Name: "shell-yes", Answer: "yes", Want: Want{State: combine.Done}, Deadline: 60 * time.Second},
	{Name: "question", Turn: mockmodel.StepQuestion, Want: Want{combine.Blocked, "question"}, Deadline: 60 * time.Second},
	{Name: "question-answer", Answer: "1", Want: Want{State: combine.Done}, Deadline: 60 * time.Second},
	{Name: "deny", Turn: mockmodel.StepShell, Want: Want{combine.Blocked, "permission"}, Deadline: 60 * time.Second},
	{Name: "deny-no", Answer: "no", Want: Want{State: combine.Idle}, Deadline: 30 * time.Second},
	{Name: "edit", Turn: mockmodel.StepEdit, Arg: "{work}/notes.txt", Want: Want{State: combine.Done}, Deadline: 60 * time.Second},
}, turnSteps...)

// scenarios are the scenarios a [[verify.variant]] may name. A test
// fails when a name has none.
var scenarios = map[string][]Step{"auto": AutoScenario}

// text is what a step types for an agent that talks to the scripted
// model: "corral:edit /work/notes.txt".
func (s Step) text(work string) string {
	t := "corral:" + string(s.Turn)
	if s.Arg != "" {
		t += " " + strings.ReplaceAll(s.Arg, "{work}", work)
	}
	return t
}

// Steps returns the scenario steps an agent can run: a step the agent
// cannot take (no such turn, or listed in its Skip) is left out, and so
// are the steps after it that have no turn of their own (its answer).
func Steps(p *Profile, scenario []Step) (run []Step, skipped []string) {
	drop := false
	for _, s := range scenario {
		if s.Turn != "" || s.Name == "startup" {
			_, can := p.turnText(s, "")
			drop = !can
		}
		if _, skip := p.Skip[s.Name]; skip {
			drop = true
		}
		if drop {
			skipped = append(skipped, s.Name)
			continue
		}
		run = append(run, s)
	}
	return run, skipped
}

// describe is a step's action for the report.
func (s Step) describe() string {
	switch {
	case s.Turn != "":
		return fmt.Sprintf("type %q", s.text("…"))
	case s.Answer != "":
		return "corral answer " + s.Answer
	case s.Key != KeyNone:
		return "press " + string(s.Key)
	}
	return "wait"
}

// turnSteps end every scenario: turns that run, are interrupted, or end
// with prose, whatever the agent's prompts were before.
var turnSteps = []Step{
	{Name: "interrupt", Turn: mockmodel.StepSlow, Arg: "30", Want: Want{State: combine.Working}, Hold: 3 * time.Second, Deadline: 60 * time.Second},
	{Name: "interrupt-esc", Key: KeyInterrupt, Want: Want{State: combine.Idle}, Deadline: 30 * time.Second},
	{Name: "prose", Turn: mockmodel.StepProse, Want: Want{State: combine.Done}, Deadline: 60 * time.Second},
	{Name: "slow", Turn: mockmodel.StepSlow, Arg: "6", Want: Want{State: combine.Working}, Hold: 2 * time.Second, Deadline: 60 * time.Second},
	{Name: "slow-done", Want: Want{State: combine.Done}, Deadline: 60 * time.Second},
	// An interrupt while the model is still answering, before any tool
	// runs: the agent may report nothing and redraw its input box in a
	// form no rule knows. Last, since some agents put the prompt back.
	{Name: "early", Turn: mockmodel.StepStream, Arg: "8", Want: Want{State: combine.Working}, At: 800 * time.Millisecond, Deadline: 60 * time.Second},
	{Name: "early-esc", Key: KeyInterrupt, Want: Want{State: combine.Idle}, Within: time.Second, Deadline: 30 * time.Second},
}
