package mockmodel

import "strings"

// Step is what a scripted mock model server does with a turn. The step is
// chosen by a keyword in the newest user message, "corral:STEP", so a
// driver that types "corral:edit please" into an agent gets a file-edit
// tool call back, whatever the API the agent speaks.
type Step string

const (
	StepProse    Step = "prose"    // a short text answer; the turn ends
	StepShell    Step = "shell"    // one shell-command tool call (which asks permission), then a text answer
	StepEdit     Step = "edit"     // one file write/edit tool call (which asks permission), then a text answer
	StepQuestion Step = "question" // the agent's question tool where it has one (Claude Code: AskUserQuestion)
	StepSlow     Step = "slow"     // a shell tool call that takes several seconds (sleep), then a text answer
	// StepStream is a text answer the model streams slowly, word by word,
	// over several seconds ("corral:stream 8"): a turn that can be
	// interrupted while the model is still answering.
	StepStream Step = "stream"
	// StepBackground starts a shell command in the background where the
	// agent can (Claude Code: Bash with run_in_background) and ends the
	// turn while it runs ("corral:background 20": it runs 20 s).
	StepBackground Step = "background"
)

// Steps lists every step.
var Steps = []Step{StepProse, StepShell, StepEdit, StepQuestion, StepSlow, StepStream, StepBackground}

// StepOf returns the step named in text ("corral:shell"), or StepProse.
func StepOf(text string) Step {
	for {
		i := strings.Index(text, "corral:")
		if i < 0 {
			return StepProse
		}
		text = text[i+len("corral:"):]
		for _, s := range Steps {
			if strings.HasPrefix(text, string(s)) {
				return s
			}
		}
	}
}
