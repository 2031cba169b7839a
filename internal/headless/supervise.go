package headless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/procs"
	"github.com/corral-dev/corral/internal/rules"
)

// ending is why the relay stopped before the stream ended, if it did.
type ending struct {
	timedOut, cancelled bool
	prompted            string // a prompt pty-lite mode cannot answer
	// plain: no agent was named (auto) and the stream held no event, only
	// lines of text: a plain program, judged by its exit status.
	plain bool
	// detached: a held run let go (Options.Detach); lost: why a held
	// run's end is not known.
	detached bool
	lost     string
}

// watchdog is a run's timers: the timeout, and the stall timer that each
// line of output resets.
type watchdog struct {
	timeout, stall <-chan time.Time
	timeoutT       *time.Timer
	stallT         *time.Timer
	stallAfter     time.Duration
}

func newWatchdog(timeout, stall time.Duration) *watchdog {
	w := &watchdog{stallAfter: stall}
	if timeout > 0 {
		w.timeoutT = time.NewTimer(timeout)
		w.timeout = w.timeoutT.C
	}
	if stall > 0 {
		w.stallT = time.NewTimer(stall)
		w.stall = w.stallT.C
	}
	return w
}

// output restarts the stall timer.
func (w *watchdog) output() {
	if w.stallT != nil {
		w.stallT.Reset(w.stallAfter)
	}
}

// result stops stall reports: what follows a result is the agent exiting.
func (w *watchdog) result() { w.stall = nil }

func (w *watchdog) stop() {
	if w.timeoutT != nil {
		w.timeoutT.Stop()
	}
	if w.stallT != nil {
		w.stallT.Stop()
	}
}

// relay reads the agent's stream into events until it ends, answers its
// permission requests, and watches for the timeout, a stall and ctx.
func (j *job) relay(ctx context.Context) (Outcome, ending) {
	o := j.o
	if o.Prompt != "" && o.Agent != "acp" && j.held == nil { // a holder sends it itself
		j.send(RelayOpening(o.Agent, o.Prompt))
	}
	var acp *acpClient
	if o.Agent == "acp" {
		dir := o.Dir
		if dir == "" {
			dir, _ = os.Getwd()
		}
		acp = newACP(j.send, dir, o.Prompt)
		acp.start()
	}
	permission := func(req Event) {
		var once sync.Once
		answer := func(allow bool, by string) {
			once.Do(func() {
				// The decision is told before the agent hears it, so it
				// comes before anything the agent does in reply.
				d := req
				d.Type, d.Allow, d.By = EventDecision, allow, by
				j.emit(d)
				if acp != nil {
					acp.answerPermission(req, allow)
				} else {
					j.send(controlResponse(req, allow, by))
				}
			})
		}
		switch {
		case o.Policy != nil:
			answer(o.Policy.DecideRequest(PermissionRequest(req)))
		case o.OnPermission != nil:
			o.OnPermission(req, answer)
		default:
			answer(false, "no policy and nobody to ask")
		}
	}

	var out Outcome
	end := ending{plain: o.Agent == "auto" && acp == nil}
	timeout := o.Timeout
	began := time.Now()
	if !o.Started.IsZero() {
		began = o.Started
		if timeout > 0 {
			timeout = max(timeout-time.Since(began), time.Millisecond)
		}
	}
	wd := newWatchdog(timeout, o.Stall)
	defer wd.stop()
	parser := NewParser(o.Agent)
	toolCalls := 0
	if r := j.resume; r != nil { // a held run adopted: what its journal says
		out, toolCalls = r.out, r.toolCalls
		end.plain = end.plain && !r.someEvent
		if r.result {
			j.closeIn()
			wd.result()
		}
		for _, req := range r.pending {
			permission(req)
		}
	}
	lastErr := ""       // the last line on stderr, to say why a run is quiet
	var recent []string // the last lines that were not events, for prompt recognition
	onStderr := func(l string, at origin, skip int) {
		if ev, ok := StderrEvent(l); ok && skip == 0 {
			j.emitAt(ev, at)
		}
		if n := notableStderr(l); n != "" {
			lastErr = n
		}
	}
	errHeld := j.errHeld
	for {
		select {
		case raw, ok := <-errHeld:
			if !ok {
				errHeld = nil
				continue
			}
			onStderr(string(raw.line), origin{s: "e", off: raw.off}, raw.skip)
		case raw, ok := <-j.lines:
			if !ok {
				return out, end
			}
			var evs []Event
			switch {
			case raw.truncated:
				evs = []Event{diagnostic(raw.line)}
			case acp != nil:
				evs = acp.onLine(raw.line)
			default:
				evs = parser.Parse(raw.line)
			}
			for k, ev := range evs {
				if k < raw.skip {
					continue // emitted by the daemon before, and acted on
				}
				if ev.Type != EventDiagnostic {
					end.plain = false
				}
				switch ev.Type {
				case EventInit:
					out.SessionID = ev.SessionID
				case EventDiagnostic:
					out.Diagnostics++
				case EventToolUse:
					toolCalls++
				case EventResult:
					// One shape for every agent: what the agent does not
					// say, corral measured (its turns it cannot know).
					if ev.Duration == 0 {
						ev.Duration = time.Since(began).Milliseconds()
					}
					if ev.ToolCalls == 0 {
						ev.ToolCalls = toolCalls
					}
					e := ev
					out.Result = &e
					if ev.SessionID != "" && out.SessionID == "" {
						out.SessionID = ev.SessionID
					}
				}
				j.emitAt(ev, origin{s: "o", off: raw.off})
				if o.PromptRules != nil && ev.Type == EventDiagnostic {
					recent = append(recent, ev.Line)
					if len(recent) > 12 {
						recent = recent[1:]
					}
					if v := o.PromptRules.Classify(rules.Screen{Lines: recent}); v.State == rules.Blocked {
						end.prompted = fmt.Sprintf("the agent is asking for input (%s: %s) and pty-lite mode cannot answer; run it in pipe mode with a policy, or interactively with corral run", v.Kind, v.Message)
						j.kill()
						return out, end
					}
				}
				switch {
				case ev.Type == EventPermission:
					permission(ev)
				case ev.Type == EventOther && ev.RequestID != "":
					j.send(controlError(ev.RequestID, ev.Subtype))
				case ev.Type == EventResult:
					j.closeIn() // one prompt, one result: let the agent exit
					wd.result()
				}
			}
		case <-j.activity:
			wd.output()
		case l := <-j.errLines:
			onStderr(l, origin{}, 0)
		case <-wd.stall:
			j.emit(Event{Type: EventStall, Text: stallText(o.Stall, lastErr), Duration: o.Stall.Milliseconds()})
			if o.OnStall != nil {
				o.OnStall(o.Stall)
			}
		case <-wd.timeout:
			end.timedOut = true
			j.kill()
			return out, end
		case <-o.Detach:
			end.detached = true
			return out, end
		case <-ctx.Done():
			end.cancelled = true
			j.kill()
			return out, end
		}
	}
}

// finish drains what is left of the output, ends every process of the run
// and reaps the agent: out gets its stderr and exit status.
func (j *job) finish(out *Outcome) {
	// Drain what is left of the stream after a kill, without blocking.
	go func() {
		for range j.lines {
		}
	}()
	drained := make(chan struct{})
	go func() {
		<-j.readDone
		<-j.errDone
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(DrainWait):
		// Something unfound holds the output open; Wait closes our ends.
	}
	procs.WaitExit(j.pgid)
	j.kill() // anything the agent started goes too
	j.waitMu.Lock()
	j.waited = true
	j.waitMu.Unlock()
	waitErr := j.cmd.Wait()
	procs.Release(j.pgid)
	<-drained
	out.Stderr = j.errBuf.String()
	out.ExitCode = exitCode(waitErr)
}

// outcome decides how the run ended: done only with a result that is not
// an error, and never with exit status 0 otherwise; a plain program (no
// agent named, no event in its output) by its exit status alone.
func outcome(out Outcome, end ending, timeout time.Duration) Outcome {
	switch {
	case end.lost != "":
		out.State, out.Reason = "error", end.lost
	case end.prompted != "":
		// Ended by corral for asking: 1, whatever the kill made of it.
		out.State, out.Reason, out.ExitCode = "error", end.prompted, ExitFailed
	case end.timedOut:
		out.State, out.ExitCode, out.Reason = "error", ExitTimeout, fmt.Sprintf("timed out after %v; the process group was killed", timeout)
	case end.cancelled:
		out.State, out.Reason = "error", "cancelled; the process group was killed"
	case out.Result == nil && end.plain && out.ExitCode == 0:
		out.State = "done"
	case out.Result == nil && end.plain:
		out.State, out.Reason = "error", fmt.Sprintf("exit status %d (a program without an agent stream)", out.ExitCode)
	case out.Result == nil:
		out.State, out.Reason = "error", fmt.Sprintf("exited without a result event (exit status %d)", out.ExitCode)
	case out.Result.IsError:
		out.State, out.Reason = "error", ResultReason(out.Result)
		if out.ExitCode == 0 {
			out.ExitCode = 1
		}
	default:
		out.State = "done"
	}
	if out.State != "done" && out.ExitCode == 0 {
		out.ExitCode = ExitFailed // a failed run never reads as a success
	}
	return out
}

// stdinWriter writes to the agent's stdin from its own goroutine, so that
// an agent that does not read its input never holds the run (its timeout,
// its cancellation, a permission answer). close ends the input once what
// is queued is written. With a nil stdin both do nothing.
func stdinWriter(stdin io.WriteCloser) (send func([]byte), closeIn func()) {
	if stdin == nil {
		return func([]byte) {}, func() {}
	}
	var mu sync.Mutex // guards queue and closed
	var queue [][]byte
	closed := false
	wake := make(chan struct{}, 1)
	go func() {
		for {
			mu.Lock()
			batch, done := queue, closed
			queue = nil
			mu.Unlock()
			for _, b := range batch {
				if _, err := stdin.Write(b); err != nil {
					break // the agent is gone; Wait closes the pipe
				}
			}
			if done && len(batch) == 0 {
				_ = stdin.Close()
				return
			}
			if len(batch) == 0 {
				<-wake
			}
		}
	}()
	kick := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	send = func(b []byte) {
		mu.Lock()
		if !closed {
			queue = append(queue, b)
		}
		mu.Unlock()
		kick()
	}
	closeIn = func() {
		mu.Lock()
		closed = true
		mu.Unlock()
		kick()
	}
	return send, closeIn
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// tailBuffer keeps the last MaxStderr bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > MaxStderr {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-MaxStderr:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
