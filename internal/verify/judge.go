package verify

import (
	"sort"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/replay"
	"github.com/corral-dev/corral/internal/rules"
)

// Scorers are the ways each step is judged: corral live (all signals),
// then the recording replayed with one kind of signal at a time, and
// with all of them (which should agree with live).
var Scorers = []struct {
	Name    string
	Signals detect.Signals // 0: the live run
}{
	{"live", 0},
	{"screen", detect.SignalScreen},
	{"hooks", detect.SignalHooks},
	{"osc7501", detect.SignalOSC7501},
	{"replay", detect.AllSignals},
}

// Verdict is one scorer's word on one step.
type Verdict struct {
	State  combine.State `json:"state"`
	Kind   string        `json:"kind,omitempty"`
	Source string        `json:"source"`
	Rule   string        `json:"rule,omitempty"`
	// Delay is from the truth to the moment corral entered the state it
	// held at the step's end (negative: before the agent's own report).
	Delay float64 `json:"delay"`
	Right bool    `json:"right"`
}

// StepResult is one step judged.
type StepResult struct {
	StepRun
	Verdicts map[string]Verdict `json:"verdicts"`
}

// Result is a judged run.
type Result struct {
	Agent          string       `json:"agent"`
	Version        string       `json:"version"`
	Pinned         string       `json:"pinned"`
	Integration    string       `json:"integration"`
	IntegrationOff string       `json:"integration_off,omitempty"`
	Steps          []StepResult `json:"steps"`
	Skipped        []string     `json:"skipped,omitempty"`
	// Scores counts right steps per scorer.
	Scores map[string]int `json:"scores"`
}

// OK says whether corral was right, live, at every step.
func (r *Result) OK() bool { return r.Scores["live"] == len(r.Steps) }

// Judge scores every step of a recording: live from its stored states,
// and by replaying it through the engine with each set of signals.
func Judge(rec *Recording, set *rules.Set) *Result {
	res := &Result{Agent: rec.Agent, Version: rec.Version, Pinned: rec.Pinned, Integration: rec.Integration, IntegrationOff: rec.IntegrationOff,
		Skipped: rec.Skipped, Scores: map[string]int{}}
	timelines := map[string][]Point{}
	for _, sc := range Scorers {
		if sc.Signals == 0 {
			for _, p := range rec.Live {
				timelines[sc.Name] = append(timelines[sc.Name], Point{At: dur(p.At), State: combine.State(p.State), Kind: p.Kind, Source: p.Source, Rule: p.Rule})
			}
			continue
		}
		timelines[sc.Name] = Replay(rec, set, sc.Signals)
	}
	for _, s := range rec.Steps {
		sr := StepResult{StepRun: s, Verdicts: map[string]Verdict{}}
		for _, sc := range Scorers {
			v := judgeStep(timelines[sc.Name], s)
			if sc.Signals == 0 && s.Fault != "" {
				v.Right = false
			}
			sr.Verdicts[sc.Name] = v
			if v.Right {
				res.Scores[sc.Name]++
			}
		}
		res.Steps = append(res.Steps, sr)
	}
	return res
}

func dur(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// judgeStep reads a timeline of state changes at one step: the state held
// at the step's end is the verdict, right when it is the wanted one.
func judgeStep(tl []Point, s StepRun) Verdict {
	cur := Point{State: combine.Idle, Source: "default"}
	since := time.Duration(0)
	end := dur(s.End)
	for _, p := range tl {
		if p.At > end {
			break
		}
		if p.State != cur.State || p.Kind != cur.Kind {
			since = p.At
		}
		cur = p
	}
	v := Verdict{State: cur.State, Kind: cur.Kind, Source: cur.Source, Rule: cur.Rule, Right: s.Want.Matches(cur.State, cur.Kind)}
	v.Delay = (since - dur(s.Truth)).Seconds()
	return v
}

// Replay runs a recording's output and hook reports through a fresh
// engine limited to signals, on the recording's clock, as a live pane
// would (a sweep every second, a finished turn marked done), and returns
// its state changes.
func Replay(rec *Recording, set *rules.Set, signals detect.Signals) []Point {
	e := detect.New(detect.Config{Cols: rec.Cols, Rows: rec.Rows, Rules: set, Agent: rec.Rules, Signals: signals, MarkDone: true})
	defer e.Close()
	type item struct {
		at        time.Duration
		out       string
		hook      *Hook
		interrupt bool
		submit    bool
	}
	var items []item
	for _, ev := range rec.Cast.Events {
		if ev.Code == "o" {
			items = append(items, item{at: ev.At, out: ev.Data})
		}
	}
	for i := range rec.Hooks {
		items = append(items, item{at: dur(rec.Hooks[i].At), hook: &rec.Hooks[i]})
	}
	// A person's refusal or interrupt, as the pane notes it when typed.
	for _, s := range rec.Steps {
		if s.Action == "press "+string(KeyNo) || s.Action == "press "+string(KeyInterrupt) {
			items = append(items, item{at: dur(s.Start), interrupt: true})
		}
		if strings.HasPrefix(s.Action, "type ") {
			items = append(items, item{at: dur(s.Start), submit: true})
		}
	}
	var last time.Duration
	for _, s := range rec.Steps {
		last = max(last, dur(s.End))
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].at < items[j].at })

	var out []Point
	add := func(cs []detect.Change) {
		for _, c := range cs {
			d := c.Decision
			out = append(out, Point{At: c.At.Sub(replay.Epoch), State: d.State, Kind: d.Kind, Source: string(d.Source), Rule: d.Rule, Message: d.Message})
		}
	}
	const sweep = time.Second
	nextSweep := sweep
	advance := func(to time.Duration) {
		for {
			at, ok := e.Deadline()
			atD := at.Sub(replay.Epoch)
			if ok && atD <= to && (atD < nextSweep || nextSweep > to) {
				add(e.Tick(at))
				continue
			}
			if nextSweep <= to {
				add(e.Classify(replay.Epoch.Add(nextSweep)))
				nextSweep += sweep
				continue
			}
			return
		}
	}
	for _, it := range items {
		advance(it.at)
		now := replay.Epoch.Add(it.at)
		if it.interrupt {
			e.NoteInterrupt(now)
			continue
		}
		if it.submit {
			e.NoteTyped() // a "type" step: text, then Enter
			e.NoteSubmit(now)
			continue
		}
		if it.hook == nil {
			add(e.Feed(now, []byte(it.out)))
			continue
		}
		// As the daemon applies a hook report (server.handleHook).
		rep, err := agents.ParseHook(it.hook.Agent, it.hook.Payload)
		if err != nil {
			add(e.ApplyHook(now, detect.Hook{Ignore: true}))
			continue
		}
		add(e.ApplyHook(now, detect.Hook{State: rep.State, Kind: rep.Kind, Message: rep.Message, Session: rep.Session,
			NewSession: rep.NewSession, Clear: rep.Clear, Ignore: rep.Ignore, Reminder: rep.Reminder}))
	}
	advance(last + sweep)
	return out
}
