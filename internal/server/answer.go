package server

import (
	"time"

	"github.com/corral-dev/corral/internal/signal"
)

// PromptDrawWait bounds how long an answer waits for the prompt it
// answers to be on screen.
const PromptDrawWait = 1500 * time.Millisecond

// answer types a pane's answer once its prompt is drawn. An agent's own
// report of a prompt (a PermissionRequest hook, an OSC 7501 "blocked")
// comes before the dialog that reads the keys exists: keys typed then are
// lost, or land in the input box. So while the pane is blocked on a report
// and the screen does not yet show the prompt, wait for the screen (at
// most PromptDrawWait; an agent whose prompt corral's rules do not know is
// answered after that).
func (e *entry) answer(choice string) (string, error) {
	if p, ok := e.asPane(); ok {
		for end := time.Now().Add(PromptDrawWait); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			d := p.Info().Decision
			if d.State != signal.Blocked || d.Source == signal.SourceScreen {
				break
			}
		}
	}
	return e.p.Answer(choice)
}
