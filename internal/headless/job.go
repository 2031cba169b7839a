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

	"github.com/creack/pty"

	"github.com/corral-dev/corral/internal/procs"
	"github.com/corral-dev/corral/internal/rules"
	"github.com/corral-dev/corral/internal/term"
)

// Options describe a headless run.
type Options struct {
	Agent   string // "claude", "codex" or "gemini": how to read its stream
	Argv    []string
	Dir     string
	Env     []string
	Timeout time.Duration // past this the run is killed and ends in error (124)
	Stall   time.Duration // no output for this long: OnStall is called
	OnEvent func(Event)   // every event, in order
	OnStall func(quiet time.Duration)

	// Prompt, when set, is sent on stdin as a stream-json user message and
	// stdin stays open for the control protocol (see ClaudeRelay); stdin
	// closes after the result.
	Prompt string
	// Policy decides permission requests when set; otherwise OnPermission
	// gets them, with a function to answer (from any goroutine, once);
	// with neither, they are denied.
	Policy       *Policy
	OnPermission func(req Event, answer func(allow bool, by string))
	// OnStart receives the process id once it runs.
	OnStart func(pid int)
	// Mark is an environment entry ("CORRAL_JOB=ID") added to the run's
	// environment, by which the processes it starts are found and ended
	// wherever they went (see procs.Group).
	Mark string
	// Guard, when set, is the command (procs.GuardMain) that starts the
	// run as its child and ends it when the daemon ends: the run's path
	// and argv follow its arguments, and its fd 3 is the lifeline.
	Guard []string

	// Mode is "pipe" (the default) or "pty-lite": stdout is a PTY (1000
	// columns, so lines do not wrap) for programs that block-buffer a pipe;
	// stdin is /dev/null and stderr stays a pipe; escape sequences are
	// stripped. There is no stdin in pty-lite mode, so no permission relay:
	// a prompt PromptRules recognise on the output ends the run at once.
	Mode        string
	PromptRules *rules.Manifest

	// BaseEnv, when not nil, is the environment Env is added to instead of
	// corral's own (a job runs with its caller's).
	BaseEnv []string

	// Spool, when set, is the job's folder: the run is held there by a job
	// holder (Hold, the command that starts one; see HoldMain) and
	// outlives the daemon. Adopt follows a run held there already, from
	// the events its journal holds on; Started is when it began (its
	// timeout counts from then). Detach, once closed, lets the run go on
	// unread (Run returns ErrDetached). Replayed is called once the
	// journal's events have gone to OnEvent.
	Spool    string
	Hold     []string
	Adopt    bool
	Started  time.Time
	Detach   <-chan struct{}
	Replayed func()
}

// DrainWait bounds how long the end of a run's output is read once every
// process of the run has been ended.
const DrainWait = 2 * time.Second

// PTYLiteCols is the width of a pty-lite terminal.
const PTYLiteCols = 1000

// Outcome is how a run ended.
type Outcome struct {
	State       string `json:"state"` // "done" or "error"
	Reason      string `json:"reason,omitempty"`
	ExitCode    int    `json:"exit_code"`
	SessionID   string `json:"session_id,omitempty"`
	Stderr      string `json:"stderr,omitempty"`
	Diagnostics int    `json:"diagnostics"`
	Result      *Event `json:"result,omitempty"`
}

// rawLine is one line of output as read.
type rawLine struct {
	line      []byte
	truncated bool
	off       int64 // where it begins in a held run's file
	skip      int   // its first events were emitted already (a held run adopted)
}

// Exit statuses of a run, besides the agent's own non-zero status (or
// 128+N when a signal N killed it).
const (
	// ExitFailed is the status of a run that did not succeed while the
	// agent exited 0: no result event, an error result, a prompt in
	// pty-lite mode.
	ExitFailed = 1
	// ExitTimeout is the status of a run killed at its timeout.
	ExitTimeout = 124
)

// EventStall says the run printed nothing for its Stall (Text says how
// long, Duration in milliseconds). It is corral's, not the agent's.
const EventStall EventType = "stall"

// Summary is the event as one line for people: String, and corral's own
// events.
func (e Event) Summary() string {
	if e.Type == EventStall {
		return "stalled: " + e.Text
	}
	return e.String()
}

// MaxStderr bounds the stderr kept with a run (its end is kept).
const MaxStderr = 1 << 20

// Run runs the agent with stdin from /dev/null and stdout and stderr as
// pipes, in its own process group, and reads its stream until it exits.
// Cancelling ctx (corral itself is ending), the timeout, or the end of
// the run kills the whole process group: nothing is left behind.
func Run(ctx context.Context, o Options) (Outcome, error) {
	j, err := start(o)
	if err != nil {
		return Outcome{}, err
	}
	defer j.close()
	out, end := j.relay(ctx)
	if end.detached {
		j.held.stopFollowing()
		return Outcome{}, ErrDetached
	}
	if j.held != nil {
		j.finishHeld(&out, &end)
	} else {
		j.finish(&out)
	}
	return outcome(out, end, o.Timeout), nil
}

// job is a started run: its process group and the readers of its output.
type job struct {
	o    Options
	cmd  *exec.Cmd
	ptmx *os.File // pty-lite's master; nil in pipe mode
	// lifeline ends the guard's run when the daemon ends (nil: no guard).
	lifeline *os.File
	stdin    io.WriteCloser
	pgid     int
	group    procs.Group

	// The agent's pid finds what it left only while it is a zombie:
	// once waited, it is never used again.
	waitMu sync.Mutex
	waited bool

	errBuf   tailBuffer
	errDone  chan struct{}
	errLines chan string
	activity chan struct{} // a line of output came
	lines    chan rawLine
	readDone chan struct{}

	// Events are emitted one at a time (answers to permission requests
	// may come from other goroutines), and none once Run has returned.
	emitMu  sync.Mutex
	ended   bool
	send    func([]byte)
	closeIn func()

	// A held run (Options.Spool): its holder, the stderr lines of its
	// file, and what the journal said when it was adopted.
	held    *heldRun
	errHeld chan rawLine
	resume  *resumeState
}

// start checks o, starts the agent in its own process group and begins
// reading its stdout and stderr.
func start(o Options) (*job, error) {
	if o.Adopt {
		return adoptHeld(o)
	}
	if len(o.Argv) == 0 {
		return nil, errors.New("no command to run")
	}
	// Found as the caller would: relative to Dir, on the caller's PATH.
	env := append(baseEnv(o.BaseEnv), o.Env...)
	path, err := procs.Resolve(o.Argv[0], o.Dir, env)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Argv[0], err)
	}
	if o.Agent == "acp" && o.Prompt == "" {
		return nil, errors.New("an ACP agent needs a prompt (--prompt)")
	}
	if o.Mode == "pty-lite" && (o.Prompt != "" || o.Agent == "acp") {
		return nil, errors.New("pty-lite mode has no stdin, so no permission relay; use pipe mode")
	}
	if o.Spool != "" {
		if o.Mode == "pty-lite" || o.Agent == "acp" {
			return nil, errors.New("a held run reads a stream in pipe mode, not pty-lite or ACP")
		}
		if o.Mark != "" {
			env = append(env, o.Mark)
		}
		return startHeld(o, path, env)
	}
	cmd := exec.Command(path, o.Argv[1:]...)
	cmd.Args[0] = o.Argv[0]
	// The daemon keeps the lifeline's write end open while the run runs.
	var lifeline, lifelineIn *os.File
	if len(o.Guard) > 0 {
		args := append(append(append([]string(nil), o.Guard[1:]...), path), o.Argv...)
		cmd = exec.Command(o.Guard[0], args...)
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", o.Argv[0], err)
		}
		lifelineIn, lifeline = r, w
		defer lifelineIn.Close()       // the guard has its own copy
		cmd.ExtraFiles = []*os.File{r} // procs.GuardFD
	}
	cmd.Dir = o.Dir
	cmd.Env = env
	if o.Mark != "" {
		cmd.Env = append(cmd.Env, o.Mark)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	j := &job{o: o, cmd: cmd, lifeline: lifeline, errDone: make(chan struct{}), errLines: make(chan string, 16),
		activity: make(chan struct{}, 1), lines: make(chan rawLine, 64), readDone: make(chan struct{})}
	var stdout io.Reader
	var ptyTTY *os.File
	if o.Mode == "pty-lite" {
		ptmx, tty, err := pty.Open()
		if err != nil {
			return nil, fmt.Errorf("pty-lite: %w", err)
		}
		j.ptmx = ptmx
		_ = pty.Setsize(ptmx, &pty.Winsize{Cols: PTYLiteCols, Rows: 50})
		cmd.Stdout, ptyTTY, stdout = tty, tty, ptmx
	} else {
		p, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		stdout = p
	}
	if o.Prompt != "" { // the relay, or ACP
		p, err := cmd.StdinPipe()
		if err != nil {
			j.close()
			return nil, err
		}
		j.stdin = p
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		j.close()
		return nil, err
	}
	if _, err := procs.Spawn(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	}); err != nil {
		if ptyTTY != nil {
			ptyTTY.Close()
		}
		j.close()
		return nil, fmt.Errorf("start %s: %w", o.Argv[0], err)
	}
	if ptyTTY != nil {
		ptyTTY.Close() // the child has it; EIO on the master means it is gone
	}
	j.pgid = cmd.Process.Pid
	if o.OnStart != nil {
		o.OnStart(j.pgid)
	}
	// Every process of the run goes, in its group or gone elsewhere
	// (setsid, a group of its own): they would hold its output open.
	j.group = procs.NewGroup(j.pgid, o.Mark) // not waited for yet: the pid is its own
	// Once the agent has exited, what it left must not hold its output open.
	go func() {
		procs.WaitExit(j.pgid)
		j.waitMu.Lock()
		defer j.waitMu.Unlock()
		if !j.waited {
			j.kill()
		}
	}()
	go func() {
		_, _ = io.Copy(io.MultiWriter(&j.errBuf, &stderrLines{out: j.errLines}), stderr)
		close(j.errDone)
	}()
	go j.read(stdout)
	j.send, j.closeIn = stdinWriter(j.stdin)
	return j, nil
}

// read passes stdout's lines to the relay, and says there was output.
func (j *job) read(stdout io.Reader) {
	defer close(j.readDone)
	defer close(j.lines)
	r := NewLines(stdout)
	for {
		line, truncated, err := r.Next()
		if err != nil {
			return // EOF, or EIO from a pty-lite master: the end either way
		}
		if j.o.Mode == "pty-lite" {
			line = []byte(term.StripEscapes(line))
		}
		select {
		case j.activity <- struct{}{}:
		default:
		}
		j.lines <- rawLine{line: append([]byte(nil), line...), truncated: truncated}
	}
}

// kill ends every process of the run.
func (j *job) kill() {
	if j.held != nil {
		j.held.kill(syscall.SIGKILL) // its holder ends what the run left, and tells
		return
	}
	_ = j.group.SignalGroup(syscall.SIGKILL)
	j.group.KillAll(5 * time.Second)
}

func (j *job) emit(ev Event) { j.emitAt(ev, origin{}) }

// emitAt emits an event that came from at; a held run's journal keeps it
// first.
func (j *job) emitAt(ev Event, at origin) {
	j.emitMu.Lock()
	defer j.emitMu.Unlock()
	if j.ended {
		return
	}
	if j.held != nil {
		j.held.record(ev, at)
	}
	if j.o.OnEvent != nil {
		j.o.OnEvent(ev)
	}
}

// close ends stdin and the events, and frees the pty.
func (j *job) close() {
	if j.held != nil {
		// A held run's stdin is its holder's: a run let go keeps it.
		j.emitMu.Lock()
		j.ended = true
		j.emitMu.Unlock()
		j.held.close()
		return
	}
	if j.closeIn != nil {
		j.closeIn()
	}
	j.emitMu.Lock()
	j.ended = true
	j.emitMu.Unlock()
	if j.ptmx != nil {
		j.ptmx.Close()
	}
	if j.lifeline != nil {
		j.lifeline.Close()
	}
}
