// Package jobs is the daemon's headless jobs, a kind of their own beside
// the panes: a job's life (its run, its stream's events kept for its
// stream, its screen of readable lines, its permission requests answered,
// its cancel and its end), the folders that keep a held job across
// daemons, and taking those jobs again when a daemon starts.
//
// The daemon keeps the table the jobs are registered in (the pane set's,
// one space of ids and names with the panes) and gives this package what
// it needs through Options: its state folder, its socket, the holder's
// binary, where a change of state goes. There is no package state.
//
// Locks: Job.mu guards a job's changing fields (its state, screen, kept
// events, pending permission request, outcome) and is held only to read
// or write them: never while calling out (Options.Record, a permission's
// answer, the row written at the end), so a job's changes reach the
// daemon outside it, and the daemon may hold its own locks while it reads
// a job. Host has no lock: its options are set once.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/term"
)

// Limits on what a job keeps.
const (
	jobLines   = 500  // readable lines, for its screen
	jobLineMax = 4096 // bytes of one readable line
	// jobBacklogKeep is how long a finished job keeps its events for a
	// stream that comes late; then only its outcome and screen stay.
	jobBacklogKeep = time.Minute
	jobEvents      = 10000 // events, for a stream that starts late or falls behind
)

// Job is a headless run hosted by the daemon: a kind of its own beside the
// panes, in its own table (the pane set's jobs). It has no terminal and
// takes no typing; its state comes from its stream, its permission
// requests are answered through Answer, and its events are kept for its
// stream.
type Job struct {
	id, name, agent string
	argv            []string
	dir             string
	started         time.Time
	cancel          context.CancelFunc
	done            chan struct{}
	onChange        func(detect.Change)

	// mu guards the fields that follow.
	mu       sync.Mutex
	decision combine.Decision
	since    time.Time
	pid      int
	lines    []string
	// events holds the newest jobEvents (to twice that) events; base is
	// the number of older ones dropped. grew is closed (and replaced) at
	// each new event and at the end.
	events  []headless.Event
	base    int
	grew    chan struct{}
	pending *permissionAsk
	outcome *headless.Outcome
	endedAt time.Time
	session string
	// textOpen: the last screen line is a streamed text that goes on.
	textOpen bool
	// asks: its permission requests come to the person (no policy, and a
	// stdin to answer them on).
	asks bool
	// quiet: events replayed from a held job's journal are not changes to
	// log again.
	quiet bool

	// fleet: the fleet job it runs (nil for none).
	fleet *api.FleetJob

	// A held job (see store.go): its folder, what keeps its outcome
	// there, and the detach that lets it go on for the next daemon (ran is
	// closed once its Run has returned).
	spool    string
	onEnd    func(headless.Outcome, time.Time)
	detach   chan struct{}
	detached sync.Once
	ran      chan struct{}
}

type permissionAsk struct {
	req    headless.Event
	answer func(allow bool, by string)
}

// ErrNoInput refuses typing into a job.
var ErrNoInput = errors.New("a headless job takes no input")

// Run runs a headless job of these options as they are (Host.Start holds
// or guards it first); changes of state go to onChange.
func Run(id, name string, o headless.Options, onChange func(detect.Change)) *Job {
	j, ctx, o := newJob(id, name, o, onChange, nil)
	j.run(ctx, o)
	return j
}

// newJob makes a job of these options and returns them wired to it, for
// run; the caller may set the job's fields before. A held job (o.Spool)
// calls onEnd once its outcome is known.
func newJob(id, name string, o headless.Options, onChange func(detect.Change), onEnd func(headless.Outcome, time.Time)) (*Job, context.Context, headless.Options) {
	ctx, cancel := context.WithCancel(context.Background())
	j := &Job{id: id, name: name, agent: o.Agent, argv: o.Argv, dir: o.Dir, started: time.Now(), cancel: cancel,
		done: make(chan struct{}), onChange: onChange, grew: make(chan struct{}),
		decision: combine.Decision{State: combine.Working, Source: combine.SourceStream},
		spool:    o.Spool, onEnd: onEnd, detach: make(chan struct{}), ran: make(chan struct{})}
	if !o.Started.IsZero() {
		j.started = o.Started
	}
	o.Detach = j.detach
	if o.Adopt {
		j.quiet = true
		o.Replayed = func() {
			j.mu.Lock()
			j.quiet = false
			j.mu.Unlock()
		}
	}
	j.since = j.started
	o.OnEvent = j.event
	o.OnStart = func(pid int) {
		j.mu.Lock()
		j.pid = pid
		j.mu.Unlock()
	}
	if o.Policy == nil {
		o.OnPermission = j.ask
		j.asks = o.Prompt != ""
	}
	o.OnStall = func(quiet time.Duration) {
		// The stall event itself reached the stream (and the screen) first.
		j.set(combine.Decision{State: combine.Working, Kind: KindStalled, Source: combine.SourceStream, Message: fmt.Sprintf("stalled: no output for %v", quiet)})
	}
	return j, ctx, o
}

// run runs the job's process, and ends the job with its outcome.
func (j *Job) run(ctx context.Context, o headless.Options) {
	go func() {
		defer close(j.ran)
		out, err := headless.Run(ctx, o)
		if errors.Is(err, headless.ErrDetached) {
			return // it goes on under its holder; the next daemon follows it
		}
		if err != nil {
			out = headless.Outcome{State: "error", Reason: err.Error(), ExitCode: 127}
		}
		j.finish(out)
	}()
}

// ID, Name and Agent are the job's id, its name and how its stream is
// read.
func (j *Job) ID() string    { return j.id }
func (j *Job) Name() string  { return j.name }
func (j *Job) Agent() string { return j.agent }

// LetGo stops following a held job and leaves it running, for the next
// daemon (a hand-over). It reports false for a job that is not held or
// has ended: that one is ended or over as before.
func (j *Job) LetGo() bool {
	if !j.HeldRunning() {
		return false
	}
	j.detached.Do(func() { close(j.detach) })
	<-j.ran
	select {
	case <-j.done:
		return false // it ended first
	default:
		return true
	}
}

func (j *Job) Done() <-chan struct{} { return j.done }

// Answers are the answers a job's permission request takes, as the web
// board offers them.
func (j *Job) Answers() []string { return []string{"yes", "no"} }

// RefuseInput says why a job takes no typing.
func (j *Job) RefuseInput() error {
	if j.asks {
		return fmt.Errorf("%w; answer its permission requests with corral answer", ErrNoInput)
	}
	return ErrNoInput
}

// KindStalled marks a working job that has printed nothing for its --stall.
const KindStalled = "stalled"

// KindRetrying marks a working job whose agent retries the model API.
const KindRetrying = "retrying"

// event records one stream event and wakes the streams. Streams read the
// kept events at their own pace: none is lost to a slow reader unless it
// falls jobEvents behind.
func (j *Job) event(e headless.Event) {
	j.screenLine(e)
	j.mu.Lock()
	if e.Type == headless.EventInit {
		j.session = e.SessionID
	}
	stalled := j.decision.Kind == KindStalled
	// A retry ends when the model answers: an init or a warning says
	// nothing of that (stdout and stderr are read apart, so a retry on
	// stderr may be handled before an init line printed first).
	retrying := j.decision.Kind == KindRetrying && e.Type != headless.EventInit && e.Type != headless.EventWarning
	j.events = append(j.events, e)
	if len(j.events) > 2*jobEvents { // dropped in halves: no copy per event
		drop := len(j.events) - jobEvents
		j.events = append([]headless.Event(nil), j.events[drop:]...)
		j.base += drop
	}
	close(j.grew)
	j.grew = make(chan struct{})
	j.mu.Unlock()
	switch {
	case e.Type == headless.EventRetry:
		// The run is waiting on the model API: say so until it goes on.
		j.set(combine.Decision{State: combine.Working, Kind: KindRetrying, Source: combine.SourceStream, Message: e.Summary()})
	case e.Type == headless.EventDecision || ((stalled || retrying) && e.Type != headless.EventStall):
		j.set(combine.Decision{State: combine.Working, Source: combine.SourceStream})
	}
}

// Session returns the agent's session id, once its init line arrived.
func (j *Job) Session() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.session
}

// screenLine puts an event on the job's screen: pieces of a streamed text
// on one line, nothing for events corral has no use for.
func (j *Job) screenLine(e headless.Event) {
	if !e.Readable() || e.Type == headless.EventText && e.Delta && e.Text == "" {
		return
	}
	j.mu.Lock()
	open := j.textOpen && len(j.lines) > 0
	j.textOpen = e.Type == headless.EventText && e.Delta
	if open && j.textOpen {
		last := j.lines[len(j.lines)-1]
		j.lines = j.lines[:len(j.lines)-1]
		j.mu.Unlock()
		j.line(last + e.Text)
		return
	}
	j.mu.Unlock()
	j.line(e.Summary())
}

func (j *Job) line(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, l := range strings.Split(s, "\n") {
		if len(l) > jobLineMax {
			cut := jobLineMax
			for cut > 0 && !utf8.RuneStart(l[cut]) {
				cut--
			}
			l = l[:cut] + "…"
		}
		j.lines = append(j.lines, l)
	}
	if len(j.lines) > jobLines {
		j.lines = j.lines[len(j.lines)-jobLines:]
	}
}

// ask parks a permission request until someone answers.
func (j *Job) ask(req headless.Event, answer func(bool, string)) {
	j.mu.Lock()
	j.pending = &permissionAsk{req: req, answer: answer}
	j.mu.Unlock()
	j.set(combine.Decision{State: combine.Blocked, Kind: "permission", Source: combine.SourceStream,
		Message: fmt.Sprintf("approve %s: %s", req.Tool, req.Input)})
}

// Answer allows (yes, always) or denies (no, cancel) the pending request.
func (j *Job) Answer(choice string) (string, error) {
	j.mu.Lock()
	p := j.pending
	j.pending = nil
	j.mu.Unlock()
	if p == nil {
		return "", fmt.Errorf("%w (it is %s)", pane.ErrNotBlocked, j.Decision().State)
	}
	switch choice {
	case "yes", "always", "1":
		p.answer(true, "corral answer "+choice)
	case "no", "cancel", "2":
		p.answer(false, "corral answer "+choice)
	default:
		j.mu.Lock()
		j.pending = p
		j.mu.Unlock()
		return "", fmt.Errorf("%w %q for a headless job; it knows yes, always, no, cancel", pane.ErrNoAnswer, choice)
	}
	return choice, nil
}

func (j *Job) set(d combine.Decision) {
	j.mu.Lock()
	prev := j.decision
	changed := combine.Changed(prev, d)
	j.decision = d
	now := time.Now()
	if changed {
		j.since = now
	}
	quiet := j.quiet
	j.mu.Unlock()
	if changed && j.onChange != nil && !quiet {
		j.onChange(detect.Change{At: now, Previous: prev, Decision: d})
	}
}

func (j *Job) finish(out headless.Outcome) {
	j.finishAt(out, time.Now())
}

// finishAt ends the job with its outcome, at when.
func (j *Job) finishAt(out headless.Outcome, when time.Time) {
	if j.onEnd != nil {
		j.onEnd(out, when) // kept before anyone learns it
	}
	j.mu.Lock()
	j.outcome = &out
	j.endedAt = when
	close(j.grew)
	j.grew = make(chan struct{})
	j.mu.Unlock()
	d := combine.Decision{State: combine.Done, Source: combine.SourceStream, ExitCode: out.ExitCode}
	if out.State != "done" {
		d = combine.Decision{State: combine.Error, Source: combine.SourceStream, Message: out.Reason, ExitCode: out.ExitCode}
	}
	j.line("outcome: " + out.State + " " + out.Reason)
	j.set(d)
	close(j.done)
	time.AfterFunc(jobBacklogKeep, j.releaseEvents)
}

// releaseEvents lets go of a finished job's kept events (a single line of
// an agent's output may be megabytes); a stream that starts later learns
// how many it missed.
func (j *Job) releaseEvents() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.base += len(j.events)
	j.events = nil
}

// EndedAt is when the job ended (zero while it runs).
func (j *Job) EndedAt() time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.endedAt
}

// Outcome returns how the job ended (nil while it runs).
func (j *Job) Outcome() *headless.Outcome {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.outcome
}

// Since returns the events from number next on (numbered from the job's
// start), the number after them, how many of those asked for were dropped
// (too old), a channel closed when there is more, and whether the job has
// ended (then nothing follows what was returned).
func (j *Job) Since(next int) (evs []headless.Event, after, missed int, more <-chan struct{}, ended bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if next < j.base {
		missed, next = j.base-next, j.base
	}
	next = min(next, j.base+len(j.events)) // a number from the future starts at the end
	evs = append([]headless.Event(nil), j.events[next-j.base:]...)
	return evs, j.base + len(j.events), missed, j.grew, j.outcome != nil
}

// Decision is the job's state.
func (j *Job) Decision() combine.Decision {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.decision
}

// JSON is the job as the API shows it: a row beside the panes, of backend
// "headless", whose stream is its report (its integration).
func (j *Job) JSON() api.Pane {
	j.mu.Lock()
	defer j.mu.Unlock()
	d := j.decision
	out := api.Pane{ID: j.id, Name: j.name, Agent: j.agent, State: string(d.State), Kind: d.Kind, Message: d.Message,
		Since: j.since.UTC().Format(eventlog.TimeFormat), Source: string(d.Source), Rule: d.Rule, PID: j.pid,
		Cwd: j.dir, Command: j.argv, Records: []api.Record{}, Integration: j.agent,
		SessionID: j.session, Backend: "headless", Fleet: j.fleet}
	if j.outcome != nil {
		code := j.outcome.ExitCode
		out.ExitCode = &code
	}
	if j.pending != nil {
		out.Prompt = &api.Prompt{Answers: []string{"yes", "always", "no", "cancel"}, Choices: []api.Choice{}}
	}
	return out
}

// Snapshot is the job's screen: its newest readable lines.
func (j *Job) Snapshot() term.Snapshot {
	j.mu.Lock()
	defer j.mu.Unlock()
	lines := j.lines
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return term.Snapshot{Cols: 120, Rows: len(lines), Lines: append([]string(nil), lines...), Title: j.name}
}

// StyledRows is the job's screen for the web board: its lines, unstyled.
func (j *Job) StyledRows() [][]term.Run {
	lines := j.Snapshot().Lines
	out := make([][]term.Run, len(lines))
	for i, l := range lines {
		out[i] = []term.Run{{Text: l}}
	}
	return out
}

// ANSI is the job's screen as a terminal would draw it: its lines.
func (j *Job) ANSI() string {
	return strings.Join(j.Snapshot().Lines, "\r\n")
}

// Kill ends the job's process group (any signal ends it: a job has no
// terminal to deliver others to).
func (j *Job) Kill(syscall.Signal) error {
	j.cancel()
	return nil
}

// Close ends the job and waits (a while) for its end.
func (j *Job) Close(grace time.Duration) {
	j.cancel()
	select {
	case <-j.done:
	case <-time.After(grace + 5*time.Second):
	}
}
