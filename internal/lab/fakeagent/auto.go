package fakeagent

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"
)

// autoLoop is --auto: the agent gives itself tasks, forever. A person (or
// corral answer) may answer its prompts; one nobody answers within 30 s is
// taken as allowed, so a demo keeps moving.
func (a *agent) autoLoop(keys <-chan byte) int {
	commands := []string{"go test ./...", "rm -rf build", "npm install", "git push origin main", "make deploy"}
	for n := 0; ; n++ {
		if !a.pause(keys, time.Duration(2000+a.rng.Intn(4000))*time.Millisecond) {
			return 0
		}
		task := []string{"work", "ask", "question", "prose"}[a.rng.Intn(4)]
		a.say("❯ task " + fmt.Sprint(n+1) + ": " + task)
		a.work(time.Duration(1500+a.rng.Intn(3500)) * time.Millisecond)
		switch task {
		case "ask":
			a.command = commands[a.rng.Intn(len(commands))]
			if !a.askFor(keys, 30*time.Second) {
				a.finish("Interrupted · What should Fake Agent do instead?", "idle")
				continue
			}
			a.work(time.Duration(1000+a.rng.Intn(2000)) * time.Millisecond)
		case "question":
			choice := a.question(keys, 30*time.Second)
			a.say("● You chose " + choice + ".")
			a.work(time.Duration(1000+a.rng.Intn(2000)) * time.Millisecond)
		case "prose":
			a.finish("● I fixed the off-by-one in the parser. Would you like me to add a regression test?", "done")
			continue
		}
		a.finish("● Done. I did what you asked.", "done")
	}
}

// pause waits, idle; it reports false when input ended.
func (a *agent) pause(keys <-chan byte, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case _, ok := <-keys:
			if !ok {
				return false
			}
		case <-t.C:
			return true
		}
	}
}

// question draws a multiple-choice menu in Claude Code's words and waits
// for a choice (a digit, or Enter for the first); nobody answering within
// wait picks the first.
func (a *agent) question(keys <-chan byte, limit time.Duration) string {
	options := []string{"Red", "Blue", "Green"}
	a.mu.Lock()
	a.state = "blocked"
	a.report("state=blocked:kind=question:msg=" + base64.StdEncoding.EncodeToString([]byte("Which color should the banner use?")))
	top := a.rows - 8
	a.write(fmt.Sprintf("\x1b[%d;1H\x1b[J", top))
	a.write("\x1b[38;5;244m" + strings.Repeat("─", a.cols) + "\x1b[39m\r\n")
	a.write(" ☐ Color\r\n\r\nWhich color should the banner use?\r\n\r\n")
	for i, o := range options {
		mark := "  "
		if i == 0 {
			mark = "❯ "
		}
		a.write(fmt.Sprintf("%s%d. %s\r\n", mark, i+1, o))
	}
	a.write("Enter to select · ↑/↓ to navigate · Esc to cancel")
	a.mu.Unlock()
	timeout := time.After(limit)
	choice := options[0]
wait:
	for {
		select {
		case b, ok := <-keys:
			switch {
			case !ok || b == '\r':
				break wait
			case b >= '1' && int(b-'1') < len(options):
				choice = options[b-'1']
				break wait
			}
		case <-timeout:
			break wait
		}
	}
	a.mu.Lock()
	a.state = "working"
	a.drawLocked()
	a.mu.Unlock()
	return choice
}
