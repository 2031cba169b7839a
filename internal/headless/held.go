package headless

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/procs"
	"github.com/corral-dev/corral/internal/safefile"
)

// ErrDetached is Run's error when Options.Detach let a held run go: it
// goes on under its holder, for the next daemon to adopt.
var ErrDetached = errors.New("the held run was let go for another daemon")

// HoldStartWait bounds how long a job holder takes to start its program.
const HoldStartWait = 10 * time.Second

// spoolPID is the file with the held program's pid (its process group),
// and spoolStart the one with its start time (procs.Group.Start): a
// daemon that comes later tells the program from a process given its pid
// since. (Two files: a daemon that knows only the first still reads it.)
const (
	spoolPID   = "pid"
	spoolStart = "start"
)

// heldRun is the daemon's side of a job holder.
type heldRun struct {
	dir  string
	wmu  sync.Mutex // orders writes on conn
	conn net.Conn   // nil: the holder was gone when the run was adopted
	// gone is closed when the holder's connection ends: the run and what
	// it left are over, and the files hold all they will.
	gone     chan struct{}
	stop     chan struct{} // the followers stop reading (a detach)
	stopOnce sync.Once
	journal  *os.File
}

// origin is where an event came from: a line of the agent's stdout ("o")
// or stderr ("e") beginning at off, or corral itself ("").
type origin struct {
	s   string
	off int64
}

// journalEntry is one line of a held job's journal: an event as emitted,
// and where it came from, so that the next daemon has the same events
// (the same numbers) and reads each file on from where the last left.
type journalEntry struct {
	S   string          `json:"s,omitempty"`
	O   int64           `json:"o,omitempty"`
	E   Event           `json:"e"`
	Raw json.RawMessage `json:"raw,omitempty"` // a permission request's input, echoed on allow
}

// resumeState is what a journal says of a held run so far.
type resumeState struct {
	events           []Event
	outOff, errOff   int64 // where the line of the last event of each file begins
	outSkip, errSkip int   // how many events of that line were emitted
	out              Outcome
	toolCalls        int
	someEvent        bool // an event that is not a diagnostic came
	result           bool
	pending          []Event // permission requests not yet decided
}

// readJournal reads the journal of the job folder dir. A last line cut
// by a crash is left out (its line of output is read again).
func readJournal(dir string) (*resumeState, error) {
	b, err := os.ReadFile(filepath.Join(dir, SpoolJournal))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("job journal: %w", err)
	}
	r := &resumeState{}
	decided := map[string]bool{}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		line := b[:i]
		b = b[i+1:]
		var e journalEntry
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		ev := e.E
		ev.rawInput = e.Raw
		r.events = append(r.events, ev)
		switch e.S {
		case "o":
			if e.O != r.outOff {
				r.outOff, r.outSkip = e.O, 0
			}
			r.outSkip++
		case "e":
			if e.O != r.errOff {
				r.errOff, r.errSkip = e.O, 0
			}
			r.errSkip++
		}
		if ev.Type != EventDiagnostic {
			r.someEvent = true
		}
		switch ev.Type {
		case EventInit:
			r.out.SessionID = ev.SessionID
		case EventDiagnostic:
			r.out.Diagnostics++
		case EventToolUse:
			r.toolCalls++
		case EventResult:
			e := ev
			r.out.Result, r.result = &e, true
			if ev.SessionID != "" && r.out.SessionID == "" {
				r.out.SessionID = ev.SessionID
			}
		case EventDecision:
			decided[ev.RequestID] = true
		}
	}
	for _, ev := range r.events {
		if ev.Type == EventPermission && !decided[ev.RequestID] {
			r.pending = append(r.pending, ev)
		}
	}
	return r, nil
}

// startHeld starts the run under a job holder in o.Spool.
func startHeld(o Options, path string, env []string) (*job, error) {
	if len(o.Hold) == 0 {
		return nil, errors.New("a held run needs the job holder's command")
	}
	dir := o.Spool
	spec := HoldSpec{Path: path, Argv: o.Argv, Dir: o.Dir, Env: env, Mark: o.Mark, Stdin: o.Prompt != ""}
	if o.Prompt != "" {
		spec.Opening = RelayOpening(o.Agent, o.Prompt)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	if err := safefile.WriteAtomic(filepath.Join(dir, SpoolSpec), b, 0o600); err != nil {
		return nil, fmt.Errorf("job folder: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(dir, SpoolLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("job folder: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(o.Hold[0], append(append([]string(nil), o.Hold[1:]...), dir)...)
	if self, err := os.Executable(); err == nil && o.Hold[0] == "/proc/self/exe" {
		cmd.Args[0] = self // what ps shows
	}
	cmd.Dir = "/"
	cmd.Stderr = logf
	// A session of its own: the holder outlives the daemon, whatever
	// ends it, and no terminal's signals reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	rd, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w
	_, err = procs.Spawn(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	w.Close()
	if err != nil {
		rd.Close()
		return nil, fmt.Errorf("start a job holder: %w", err)
	}
	go func() {
		procs.WaitExit(cmd.Process.Pid)
		_ = cmd.Wait()
		procs.Release(cmd.Process.Pid)
	}()
	_ = rd.SetReadDeadline(time.Now().Add(HoldStartWait))
	line, rerr := bufio.NewReader(io.LimitReader(rd, 64<<10)).ReadBytes('\n')
	rd.Close()
	_ = os.Remove(filepath.Join(dir, SpoolSpec)) // read by now, or never: it holds the environment
	var ready HoldReady
	if rerr != nil || json.Unmarshal(line, &ready) != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("the job holder did not start (see %s): %v", filepath.Join(dir, SpoolLog), rerr)
	}
	if ready.Error != "" {
		return nil, errors.New(ready.Error)
	}
	_ = safefile.WriteAtomic(filepath.Join(dir, spoolStart), []byte(strconv.FormatUint(ready.ProgramStart, 10)), 0o600)
	_ = safefile.WriteAtomic(filepath.Join(dir, spoolPID), []byte(strconv.Itoa(ready.ProgramPID)), 0o600)
	group := procs.Group{Root: ready.ProgramPID, Start: ready.ProgramStart, Mark: o.Mark}
	j, err := followHeld(o, group, &resumeState{})
	if err != nil {
		// Nobody would read it: it must not run on unseen. Its holder
		// ends what it left, and is reaped here.
		_ = group.SignalGroup(syscall.SIGKILL)
		return nil, err
	}
	return j, nil
}

// adoptHeld follows a run a job holder holds (or held) in o.Spool.
func adoptHeld(o Options) (*job, error) {
	r, err := readJournal(o.Spool)
	if err != nil {
		return nil, err
	}
	g := procs.Group{Mark: o.Mark}
	if b, err := safefile.ReadOwned(filepath.Join(o.Spool, spoolPID), 64); err == nil {
		g.Root, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	// Missing (a job held before start times were kept): 0, unknown.
	if b, err := safefile.ReadOwned(filepath.Join(o.Spool, spoolStart), 64); err == nil {
		g.Start, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	return followHeld(o, g, r)
}

// followHeld connects to the holder (if it runs) of the run whose
// processes are g and reads the job's files from where r says.
func followHeld(o Options, g procs.Group, r *resumeState) (*job, error) {
	pid := g.Root
	dir := o.Spool
	h := &heldRun{dir: dir, gone: make(chan struct{}), stop: make(chan struct{})}
	if c, err := net.DialTimeout("unix", filepath.Join(dir, SpoolSocket), 5*time.Second); err == nil {
		h.conn = c
		go func() {
			_, _ = io.Copy(io.Discard, c) // the holder says nothing: its hang-up is the end
			close(h.gone)
		}()
	} else {
		close(h.gone) // no holder: the files are all there is
	}
	jf, err := os.OpenFile(filepath.Join(dir, SpoolJournal), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		h.close()
		return nil, fmt.Errorf("job journal: %w", err)
	}
	h.journal = jf
	open := func(name string, off int64) (*os.File, error) {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDONLY|os.O_CREATE, 0o600)
		if err == nil {
			_, err = f.Seek(off, io.SeekStart)
		}
		return f, err
	}
	outF, err := open(SpoolOut, r.outOff)
	if err != nil {
		h.close()
		return nil, fmt.Errorf("job output: %w", err)
	}
	errF, err := open(SpoolErr, r.errOff)
	if err != nil {
		outF.Close()
		h.close()
		return nil, fmt.Errorf("job output: %w", err)
	}
	j := &job{o: o, held: h, resume: r, pgid: pid, errDone: make(chan struct{}), errLines: make(chan string, 16),
		errHeld: make(chan rawLine, 16), activity: make(chan struct{}, 1), lines: make(chan rawLine, 64), readDone: make(chan struct{})}
	j.group = g
	j.send, j.closeIn = h.send, h.closeIn
	if o.OnStart != nil && pid > 0 {
		o.OnStart(pid)
	}
	// What the last daemons emitted comes first, as it came.
	if o.OnEvent != nil {
		for _, ev := range r.events {
			o.OnEvent(ev)
		}
	}
	if o.Replayed != nil {
		o.Replayed()
	}
	go func() {
		defer close(j.readDone)
		defer close(j.lines)
		defer outF.Close()
		f := newFollower(outF, h)
		defer f.wake.close()
		j.followLines(f, r.outOff, r.outSkip, j.lines)
	}()
	go func() {
		defer close(j.errDone)
		defer close(j.errHeld)
		defer errF.Close()
		f := newFollower(errF, h)
		defer f.wake.close()
		j.followLines(f, r.errOff, r.errSkip, j.errHeld)
	}()
	return j, nil
}

// followLines passes a held file's lines on, each with where it begins;
// the first skip events of the first line were emitted already.
func (j *job) followLines(f io.Reader, off int64, skip int, to chan<- rawLine) {
	r := NewLines(f)
	for {
		at := off + r.Offset()
		line, truncated, err := r.Next()
		if err != nil {
			return
		}
		if to == j.lines {
			select {
			case j.activity <- struct{}{}:
			default:
			}
		}
		select {
		case to <- rawLine{line: append([]byte(nil), line...), truncated: truncated, off: at, skip: skip}:
		case <-j.held.stop: // let go: nobody reads on
			return
		}
		skip = 0
	}
}

// follower reads a file the holder's program writes, waiting at its end
// until the holder is gone (then the end is the end) or the reading stops.
type follower struct {
	f    *os.File
	h    *heldRun
	t    *time.Timer
	wake *fileWaker // nil: poll only
}

func newFollower(f *os.File, h *heldRun) *follower {
	return &follower{f: f, h: h, wake: newFileWaker(f.Name())}
}

// Polling bounds: a follower woken by the file's writes polls seldom, for
// a wake-up missed.
const (
	followPoll      = 100 * time.Millisecond
	followPollWoken = time.Second
)

func (r *follower) Read(p []byte) (int, error) {
	wait, most := 5*time.Millisecond, followPoll
	if r.wake != nil {
		most = followPollWoken
	}
	for {
		n, err := r.f.Read(p)
		if n > 0 || err != nil && !errors.Is(err, io.EOF) {
			return n, err
		}
		select {
		case <-r.h.stop:
			return 0, io.EOF
		case <-r.h.gone:
			if n, err = r.f.Read(p); n > 0 {
				return n, nil
			}
			return 0, io.EOF
		default:
		}
		if r.t == nil {
			r.t = time.NewTimer(wait)
		} else {
			r.t.Reset(wait)
		}
		select {
		case <-r.h.stop:
		case <-r.h.gone:
		case <-r.wake.wake():
		case <-r.t.C:
		}
		wait = min(2*wait, most)
	}
}

func (h *heldRun) msg(m holdMsg) bool {
	if h.conn == nil {
		return false
	}
	b, _ := json.Marshal(m)
	h.wmu.Lock()
	defer h.wmu.Unlock()
	_ = h.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := h.conn.Write(append(b, '\n'))
	return err == nil
}

func (h *heldRun) send(b []byte) { h.msg(holdMsg{In: b}) }
func (h *heldRun) closeIn()      { h.msg(holdMsg{Close: true}) }
func (h *heldRun) kill(sig syscall.Signal) bool {
	return h.msg(holdMsg{Kill: int(sig)})
}

// stopFollowing ends the reading of the files (the run goes on).
func (h *heldRun) stopFollowing() { h.stopOnce.Do(func() { close(h.stop) }) }

func (h *heldRun) close() {
	if h.conn != nil {
		h.conn.Close()
	}
	if h.journal != nil {
		h.journal.Close()
	}
}

// record appends an emitted event to the journal (under the job's emitMu).
func (h *heldRun) record(ev Event, at origin) {
	b, err := json.Marshal(journalEntry{S: at.s, O: at.off, E: ev, Raw: ev.rawInput})
	if err != nil {
		return
	}
	_, _ = h.journal.Write(append(b, '\n'))
}

// finishHeld waits for the holder's end and takes the exit status it
// wrote; a holder that ended without one (killed) leaves the run lost.
func (j *job) finishHeld(out *Outcome, end *ending) {
	go func() {
		for range j.lines {
		}
	}()
	go func() {
		for range j.errHeld {
		}
	}()
	h := j.held
	select {
	case <-h.gone:
	case <-time.After(HoldStartWait):
		// A holder that does not end after its kill: what its files hold
		// is all that will be read.
		end.lost = "its holder did not end after the run was killed"
		h.stopFollowing()
	}
	<-j.readDone
	<-j.errDone
	out.Stderr = fileTail(filepath.Join(h.dir, SpoolErr), MaxStderr)
	b, err := safefile.ReadOwned(filepath.Join(h.dir, SpoolExit), 4096)
	var ex HoldExit
	if err == nil && json.Unmarshal(b, &ex) == nil {
		out.ExitCode = ex.Code
		return
	}
	if end.lost == "" {
		end.lost = "its holder ended without the run's exit status (was it killed?); what the run left was ended"
	}
	out.ExitCode = -1
	if j.pgid > 0 {
		j.group.KillAll(5 * time.Second)
	}
}

// fileTail is the last max bytes of a file.
func fileTail(path string, max int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		_, _ = f.Seek(fi.Size()-max, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, max))
	return string(b)
}

// HeldExited reports whether the held run of the job folder dir has ended
// (its holder wrote its exit status).
func HeldExited(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, SpoolExit))
	return err == nil
}

// HeldEvents returns the events a held job's journal in dir holds, in
// the order they were emitted.
func HeldEvents(dir string) ([]Event, error) {
	r, err := readJournal(dir)
	if err != nil {
		return nil, err
	}
	return r.events, nil
}
