package verify

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/proctest"
)

// The probes measure, against installed agent CLIs, what one verify run
// sees once: how fresh starts take a first task, and how fast an
// interrupt at a given moment of a turn ends working. They run only when
// asked:
//
//	CORRAL_VERIFY_PROBE=claude-code,codex CORRAL_EXE=/path/to/corral \
//	  go test ./internal/verify -run 'TestProbe' -v -timeout 60m
//
// CORRAL_VERIFY_PROBE_STARTS is the number of fresh starts (default 10);
// CORRAL_VERIFY_PROBE_DIR keeps the interrupt probes' recordings.
func probeAgents(t *testing.T) []*Profile {
	names := os.Getenv("CORRAL_VERIFY_PROBE")
	if names == "" {
		t.Skip("set CORRAL_VERIFY_PROBE=AGENT[,AGENT] (and CORRAL_EXE) to probe installed agent CLIs")
	}
	if os.Getenv("CORRAL_EXE") == "" {
		t.Skip("set CORRAL_EXE to a corral binary built from this tree")
	}
	var out []*Profile
	for _, n := range strings.Split(names, ",") {
		p, err := ProfileFor(strings.TrimSpace(n), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := exec.LookPath(p.Binary); err != nil {
			t.Skipf("no %s on PATH", p.Binary)
		}
		out = append(out, p)
	}
	return out
}

func probeOptions(t *testing.T, p *Profile) Options {
	return Options{Profile: p, Exe: os.Getenv("CORRAL_EXE"), Rules: ruleSet(t)}
}

// corralCLI runs the corral CLI against the session's daemon.
func (ss *session) corralCLI(ctx context.Context, args ...string) (string, int) {
	cmd := exec.CommandContext(ctx, ss.o.Exe, args...)
	cmd.Env = append(os.Environ(), "CORRAL_SOCKET="+filepath.Join(ss.dir, "s.sock"))
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}
	return strings.TrimSpace(string(out)), code
}

// heard waits until the model server has a request whose text holds mark.
func heard(trace, mark string, within time.Duration) bool {
	return proctest.WaitFor(within, func() bool {
		b, _ := os.ReadFile(trace)
		return strings.Contains(string(b), mark)
	})
}

// readyWait is corral wait --state idle, with the profile's first-start
// screens answered on the way with corral answer yes, as a person would.
func (ss *session) readyWait(ctx context.Context, t *testing.T) (string, int) {
	for try := 0; try < 4; try++ {
		out, code := ss.corralCLI(ctx, "wait", ss.pane, "--state", "idle,blocked", "--timeout", "90s")
		if code != 0 {
			return out, code
		}
		if ss.cap.liveState().State != combine.Blocked {
			return out, 0
		}
		prelude := false
		for text := range ss.o.Profile.Prelude {
			prelude = prelude || ss.cap.screenHas(text)
		}
		if !prelude {
			return "blocked: " + ss.cap.liveState().Message, 3
		}
		if out, code := ss.corralCLI(ctx, "answer", ss.pane, "yes"); code != 0 {
			return out, code
		}
		proctest.WaitFor(5*time.Second, func() bool { return ss.cap.liveState().State != combine.Blocked })
	}
	return "still blocked", 3
}

// TestProbeStarts starts the agent fresh N times and, as a script does,
// runs corral wait --state idle and corral send TASK --enter at once; the
// model must hear the task (the Enter typed once), and corral must not
// read idle before the agent's ready text is on screen.
func TestProbeStarts(t *testing.T) {
	for _, p := range probeAgents(t) {
		t.Run(p.Name, func(t *testing.T) {
			n := 10
			if v, err := strconv.Atoi(os.Getenv("CORRAL_VERIFY_PROBE_STARTS")); err == nil && v > 0 {
				n = v
			}
			early, taken := 0, 0
			for i := 1; i <= n; i++ {
				e, ok := probeStart(t, p, i)
				if e {
					early++
				}
				if ok {
					taken++
				}
			}
			t.Logf("%s: idle before the ready screen %d of %d; run && wait && send took the task %d/%d", p.Name, early, n, taken, n)
			if early > 0 || taken < n {
				t.Fail()
			}
		})
	}
}

func probeStart(t *testing.T, p *Profile, i int) (early, taken bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := probeOptions(t, p)
	trace := filepath.Join(t.TempDir(), "trace")
	t.Setenv("CORRAL_MOCKMODEL_TRACE", trace)
	ss, err := openSession(ctx, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.close()
	if err := ss.startPane(ctx); err != nil {
		t.Fatal(err)
	}
	out, code := ss.readyWait(ctx, t)
	idleAt := ss.cap.since(time.Now())
	mark := fmt.Sprintf("fresh%d", i)
	sendOut, sendCode := ss.corralCLI(ctx, "send", ss.pane, "corral:prose "+mark, "--enter")
	ok := code == 0 && sendCode == 0 && heard(trace, mark, 15*time.Second)
	readyAt, seen := ss.cap.readySince()
	var idles []string
	for _, pt := range ss.cap.liveBefore(idleAt + time.Second) {
		if pt.State == combine.Idle && (!seen || pt.At < readyAt) {
			idles = append(idles, fmt.Sprintf("%.2fs %s", pt.At.Seconds(), pt.Rule))
		}
	}
	var states []string
	for _, pt := range ss.cap.liveBefore(idleAt + time.Second) {
		states = append(states, fmt.Sprintf("%.2fs %s/%s(%s)", pt.At.Seconds(), pt.State, pt.Kind, pt.Source))
	}
	t.Logf("start %d: wait %d %q at %.2fs; ready text at %.2fs; send %d %q; heard %v; states %s",
		i, code, out, idleAt.Seconds(), readyAt.Seconds(), sendCode, sendOut, ok, strings.Join(states, ", "))
	if len(idles) > 0 || !ok {
		t.Logf("start %d: idle before the ready text: %v; screen at the end:\n%s", i, idles, ss.cap.screen())
		if dir := os.Getenv("CORRAL_VERIFY_PROBE_DIR"); dir != "" {
			rec := ss.finish(ctx, []StepRun{{Name: "startup", Action: "wait", Want: Want{State: combine.Idle}, End: idleAt.Seconds()}})
			_ = rec.Save(filepath.Join(dir, fmt.Sprintf("%s-start%d", p.Name, i)))
		}
	}
	return len(idles) > 0, ok
}

// probeDelays are the moments of a turn an interrupt is typed at.
var probeDelays = []time.Duration{300 * time.Millisecond, 800 * time.Millisecond, 2 * time.Second, 5 * time.Second}

// TestProbeInterrupts types a slowly streamed answer's turn and the
// agent's interrupt keys at each of probeDelays after its Enter, and
// measures how long corral took to leave working: live, and in replays
// of the run with the screen alone, hooks and screen, and all signals.
func TestProbeInterrupts(t *testing.T) {
	for _, p := range probeAgents(t) {
		t.Run(p.Name, func(t *testing.T) {
			for _, turn := range []string{"stream", "slow"} {
				probeInterrupts(t, p, turn)
			}
		})
	}
}

func probeInterrupts(t *testing.T, p *Profile, turn string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	o := probeOptions(t, p)
	ss, err := openSession(ctx, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.close()
	if err := ss.startPane(ctx); err != nil {
		t.Fatal(err)
	}
	if out, code := ss.readyWait(ctx, t); code != 0 {
		t.Fatalf("not ready: %d %s\n%s", code, out, ss.cap.screen())
	}
	dr := &driver{o: o, d: ss.d, pane: ss.pane, cap: ss.cap, model: ss.model, work: ss.work}
	time.Sleep(time.Second)
	var runs []StepRun
	type probe struct {
		delay   time.Duration
		esc     time.Duration
		leave   time.Duration
		to      Point
		screen1 string
	}
	var probes []probe
	for _, delay := range probeDelays {
		text := "corral:stream 8"
		if turn == "slow" {
			text = "corral:slow 12"
		}
		before := ss.cap.since(time.Now())
		if err := dr.send(ctx, text, true); err != nil {
			t.Fatal(err)
		}
		sent := time.Now()
		runs = append(runs, StepRun{Name: "turn", Action: fmt.Sprintf("type %q", text), Want: Want{State: combine.Working}, Start: before.Seconds()})
		time.Sleep(time.Until(sent.Add(delay)))
		esc := ss.cap.since(time.Now())
		for i, k := range strings.Split(dr.keys(KeyInterrupt), pause) {
			if i > 0 {
				time.Sleep(300 * time.Millisecond)
			}
			if err := dr.send(ctx, k, false); err != nil {
				t.Fatal(err)
			}
		}
		runs = append(runs, StepRun{Name: "interrupt", Action: "press " + string(KeyInterrupt), Want: Want{State: combine.Idle}, Start: esc.Seconds()})
		pr := probe{delay: delay, esc: esc, leave: -1}
		if before := ss.cap.liveBefore(esc); len(before) > 0 && before[len(before)-1].State != combine.Working {
			// The turn had ended before the key: nothing to interrupt.
			pr.leave, pr.to = 0, before[len(before)-1]
		}
		end := time.Now().Add(20 * time.Second)
		for pr.leave != 0 && time.Now().Before(end) {
			for _, pt := range ss.cap.liveSince(esc) {
				if pt.State != combine.Working {
					pr.leave, pr.to = pt.At-esc, pt
					break
				}
			}
			if pr.leave >= 0 && ss.cap.since(time.Now())-esc > 1500*time.Millisecond {
				break
			}
			if pr.screen1 == "" && ss.cap.since(time.Now())-esc > time.Second {
				pr.screen1 = ss.cap.screen()
			}
			time.Sleep(20 * time.Millisecond)
		}
		if pr.screen1 == "" {
			pr.screen1 = ss.cap.screen()
		}
		runs[len(runs)-1].End = ss.cap.since(time.Now()).Seconds()
		probes = append(probes, pr)
		// Back to an empty input box before the next turn.
		_, _ = ss.corralCLI(ctx, "wait", ss.pane, "--state", "idle,done", "--timeout", "20s")
		time.Sleep(1500 * time.Millisecond)
		if ss.cap.liveState().State == combine.Done {
			_ = ss.d.c.Do(ctx, "POST", "/v1/panes/"+ss.pane+"/send", api.SendRequest{Text: "", Force: true}, nil)
		}
		// Some agents put the interrupted prompt back in the box: clear it.
		_ = ss.d.c.Do(ctx, "POST", "/v1/panes/"+ss.pane+"/send", api.SendRequest{Text: "\x15", Force: true}, nil)
		time.Sleep(700 * time.Millisecond)
	}
	rec := ss.finish(ctx, runs)
	if dir := os.Getenv("CORRAL_VERIFY_PROBE_DIR"); dir != "" {
		_ = rec.Save(filepath.Join(dir, p.Name+"-"+turn))
	}
	modes := []struct {
		name    string
		signals detect.Signals
	}{{"screen", detect.SignalScreen}, {"hooks+screen", detect.SignalScreen | detect.SignalHooks},
		{"osc7501+screen", detect.SignalScreen | detect.SignalOSC7501}, {"all", detect.AllSignals}}
	timelines := map[string][]Point{}
	for _, m := range modes {
		timelines[m.name] = Replay(rec, o.Rules, m.signals)
	}
	for _, pr := range probes {
		line := fmt.Sprintf("%s %s: Esc at %.1fs: live %s", p.Name, turn, pr.delay.Seconds(), leaveText(pr.leave, pr.to))
		for _, m := range modes {
			l, to := leaveIn(timelines[m.name], pr.esc)
			line += fmt.Sprintf("; %s %s", m.name, leaveText(l, to))
		}
		t.Log(line)
		if pr.leave < 0 || pr.leave > time.Second {
			t.Logf("screen 1s after the interrupt:\n%s", pr.screen1)
		}
	}
}

// leaveIn is how long after at a timeline left working (negative: it was
// not working at at, or never left).
func leaveIn(tl []Point, at time.Duration) (time.Duration, Point) {
	cur := Point{State: combine.Idle}
	for _, pt := range tl {
		if pt.At > at {
			if cur.State != combine.Working {
				return 0, cur
			}
			if pt.State != combine.Working {
				return pt.At - at, pt
			}
		}
		cur = pt
	}
	if cur.State != combine.Working {
		return 0, cur
	}
	return -1, cur
}

func leaveText(d time.Duration, to Point) string {
	if d < 0 {
		return "never (" + string(to.State) + ")"
	}
	s := string(to.State)
	if to.Kind != "" {
		s += "/" + to.Kind
	}
	return fmt.Sprintf("%.2fs→%s(%s)", d.Seconds(), s, to.Source)
}
