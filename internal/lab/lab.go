// Package lab measures every way of telling "waiting", live, side by side:
// a fake agent in a real PTY under corral's pane host writes its true
// state to a side file; a user bot answers its prompts and gives it tasks
// like a person would; every 50 ms each detector says "waiting" or not,
// and the scorer compares them with the truth.
package lab

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/lab/fakeagent"
	"github.com/corral-dev/corral/internal/osproc"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/replay"
	"github.com/corral-dev/corral/internal/rules"
)

// Options configure a lab run.
type Options struct {
	Seed    int64
	Tasks   int
	OSC7501 bool
	// Agent is the command that runs the fake agent (corral fake-agent);
	// its flags are appended. Env is added to its environment.
	Agent []string
	Env   []string
	Rules *rules.Set
	// Quick makes the user bot three times as quick to answer a prompt and
	// to give the next task (1–2.7 s and 1–3.3 s rather than 3–8 s and
	// 3–10 s), for tests. The agent's own pace, its silent tool calls
	// included, stays as it is.
	Quick bool
	// Progress, if set, hears about each task.
	Progress func(format string, args ...any)
}

// Sample period of the judges.
const Sample = 50 * time.Millisecond

// Detectors, in table order.
var Detectors = []string{"corral", "sweep700", "tail8k", "quiet1s", "quiet3s", "quiet5s", "quiet8s", "question", "procstate", "osc7501"}

type sample struct {
	at      time.Time
	truth   string
	waiting map[string]bool
}

// Run runs the lab and scores the detectors.
func Run(ctx context.Context, o Options) ([]Score, error) {
	if o.Tasks <= 0 {
		o.Tasks = 30
	}
	manifest, ok := o.Rules.ByName("claude-code")
	if !ok {
		return nil, fmt.Errorf("lab: the claude-code rules are missing")
	}
	dir, err := os.MkdirTemp("", "corral-lab-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	truthPath := filepath.Join(dir, "truth")
	argv := append(append([]string(nil), o.Agent...), "--lab-truth", truthPath, "--seed", strconv.FormatInt(o.Seed, 10))
	if o.OSC7501 {
		argv = append(argv, "--osc7501")
	}
	p, err := pane.Start(pane.Config{ID: "lab", Argv: argv, Env: o.Env, Cols: 100, Rows: 30, Rules: o.Rules, Agent: "claude-code"})
	if err != nil {
		return nil, err
	}
	defer p.Close(2 * time.Second)

	// The output as bytes, for the byte-tail and quiet-timer detectors.
	var outMu sync.Mutex
	var tail []byte
	lastOutput := time.Now()
	_, watcher := p.Watch()
	go func() {
		for b := range watcher.C {
			outMu.Lock()
			tail = append(tail, b...)
			if len(tail) > 64<<10 {
				tail = append([]byte(nil), tail[len(tail)-8192:]...)
			}
			lastOutput = time.Now()
			outMu.Unlock()
		}
	}()

	bot := rand.New(rand.NewSource(o.Seed + 1))
	// human is how long a person takes to react: least ms and up to spread
	// ms more (the bot draws the same numbers, quick or not).
	human := func(least, spread int) time.Duration {
		d := time.Duration(least+bot.Intn(spread)) * time.Millisecond
		if o.Quick {
			d /= 3
		}
		return d
	}
	var samples []sample
	sweep := false
	tasksSent, lastTruth := 0, ""
	var nextAction time.Time
	var action func()
	ticker := time.NewTicker(Sample)
	defer ticker.Stop()
	start := time.Now()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ticker.C:
		}
		now := time.Now()
		truth := readTruth(truthPath)
		if truth != lastTruth {
			// The user bot reacts to what it sees, like a person.
			switch truth {
			case fakeagent.TruthBlocked:
				nextAction = now.Add(human(3000, 5000))
				action = func() { _ = p.Input([]byte("1"), false) }
			case fakeagent.TruthIdle, fakeagent.TruthIdleAfterQuestion:
				if tasksSent < o.Tasks {
					wait := human(3000, 7000)
					if tasksSent == 0 {
						wait = time.Second
					}
					nextAction = now.Add(wait)
					k := tasksSent + 1
					action = func() {
						if o.Progress != nil {
							o.Progress("task %d/%d", k, o.Tasks)
						}
						_ = p.Input([]byte(fmt.Sprintf("task %d\r", k)), false)
					}
					tasksSent++
				} else {
					nextAction, action = time.Time{}, nil
				}
			}
			lastTruth = truth
		}
		if action != nil && !nextAction.IsZero() && now.After(nextAction) {
			action()
			action, nextAction = nil, time.Time{}
		}
		if truth == "" {
			continue
		}

		info := p.Info()
		snap := p.Snapshot()
		scr := rules.Screen{Lines: snap.Lines, Title: snap.Title}
		outMu.Lock()
		tailLines := replay.TailLines(tail, 8192)
		quiet := now.Sub(lastOutput)
		outMu.Unlock()
		if len(tailLines) > snap.Rows {
			tailLines = tailLines[len(tailLines)-snap.Rows:]
		}
		if n%14 == 0 { // every 700 ms
			sweep = manifest.Classify(scr).State == rules.Blocked
		}
		s := sample{at: now, truth: truth, waiting: map[string]bool{
			"corral":    info.Decision.State == combine.Blocked,
			"sweep700":  sweep,
			"tail8k":    manifest.Classify(rules.Screen{Lines: tailLines}).State == rules.Blocked,
			"quiet1s":   quiet >= time.Second,
			"quiet3s":   quiet >= 3*time.Second,
			"quiet5s":   quiet >= 5*time.Second,
			"quiet8s":   quiet >= 8*time.Second,
			"question":  endsWithQuestion(snap.Lines),
			"procstate": procSleeping(info.PID),
		}}
		if o.OSC7501 {
			root := false
			for _, r := range info.Records {
				if r.ID == "" && string(r.State) == "blocked" {
					root = true
				}
			}
			s.waiting["osc7501"] = root
		}
		samples = append(samples, s)
		if tasksSent >= o.Tasks && action == nil && (truth == fakeagent.TruthIdle || truth == fakeagent.TruthIdleAfterQuestion) &&
			now.Sub(start) > time.Second && quiet > 2*time.Second {
			break
		}
	}
	return score(samples, o.OSC7501), nil
}

func readTruth(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	last := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		last = sc.Text()
	}
	_, state, _ := strings.Cut(last, " ")
	return state
}

func endsWithQuestion(lines []string) bool {
	for _, l := range lines {
		if strings.HasSuffix(strings.TrimSpace(l), "?") {
			return true
		}
	}
	return false
}

// procSleeping is the naive "blocked in read()" check: the process state
// letter is S.
func procSleeping(pid int) bool {
	p, ok := osproc.Stat(pid)
	return ok && p.State == 'S'
}
