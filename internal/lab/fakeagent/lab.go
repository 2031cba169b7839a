package fakeagent

import (
	"fmt"
	"os"
	"time"
)

// Truth states the lab's fake agent writes to its side file.
const (
	TruthIdle              = "idle"
	TruthIdleAfterQuestion = "idle_after_question"
	TruthWorking           = "working"
	TruthWorkingQuiet      = "working_quiet"
	TruthBlocked           = "blocked"
)

// truth records the agent's real state, with the time, in the side file
// only the lab's scorer reads.
func (a *agent) truth(state string) {
	if a.truthFile == nil {
		return
	}
	fmt.Fprintf(a.truthFile, "%d %s\n", time.Now().UnixNano(), state)
}

// openTruth opens the side file.
func (a *agent) openTruth(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	a.truthFile = f
	return nil
}

// labTurn is one task of the detector lab, its shape drawn from the seed:
// spinner work; maybe a tool call that prints nothing for 0.5–6 s; maybe
// a permission prompt (answered by the lab's user bot); a reply that
// sometimes ends in a question; then idle, blocked in read().
func (a *agent) labTurn(task string, keys <-chan byte) {
	a.say("❯ " + task)
	a.truth(TruthWorking)
	a.work(time.Duration(1000+a.rng.Intn(2000)) * time.Millisecond)
	if a.rng.Intn(10) < 6 {
		a.truth(TruthWorkingQuiet)
		time.Sleep(time.Duration(500+a.rng.Intn(5500)) * time.Millisecond) // a tool call: no output at all
		a.truth(TruthWorking)
		a.work(time.Duration(300+a.rng.Intn(700)) * time.Millisecond)
	}
	if a.rng.Intn(2) == 0 {
		a.command = []string{"go test ./...", "rm -rf build", "git push", "npm install"}[a.rng.Intn(4)]
		a.truth(TruthBlocked)
		allowed := a.ask(keys)
		a.truth(TruthWorking)
		if allowed {
			a.work(time.Duration(500+a.rng.Intn(1000)) * time.Millisecond)
		}
	}
	if a.rng.Intn(10) < 3 {
		a.finish("● I fixed the off-by-one in the parser. Would you like me to add a regression test?", "done")
		a.truth(TruthIdleAfterQuestion)
		return
	}
	a.finish("● Done. I did what you asked.", "done")
	a.truth(TruthIdle)
}
