package server

import (
	"time"

	"github.com/corral-dev/corral/internal/combine"
)

// PromptDrawWait bounds how long an answer waits for the prompt it
// answers to be on screen.
const PromptDrawWait = 1500 * time.Millisecond

// answer answers a pane's or a job's request: a job's at once (see
// jobs.Job.Answer), a pane's as answerPane types it.
func (f found) answer(choice string) (string, error) {
	if f.job != nil {
		return f.job.Answer(choice)
	}
	return answerPane(f.pane, choice)
}

// answerPane types a pane's answer once its prompt can take it. An agent's
// own report of a prompt (a PermissionRequest hook, an OSC 7501 "blocked")
// comes before the dialog that reads the keys exists, and a dialog just
// drawn may not read keys yet (Claude Code drops them for a moment): keys
// typed then are lost, or land in the input box. So while the pane is
// blocked, wait until the screen has shown the prompt for the manifest's
// answer_settle — at most PromptDrawWait for the prompt to appear; a
// block whose dialog corral's rules do not recognise by then is refused
// (pane.ErrUnknownPrompt).
func answerPane(e *entry, choice string) (string, error) {
	p := e.P
	start := time.Now()
	for {
		in := p.Info()
		if in.Decision.State != combine.Blocked {
			break // Answer refuses it
		}
		now := time.Now()
		if !in.PromptShown.IsZero() {
			if ready := in.PromptShown.Add(in.AnswerSettle); now.Before(ready) {
				time.Sleep(ready.Sub(now))
			}
			break
		}
		if now.Sub(start) > PromptDrawWait {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return p.Answer(choice)
}
