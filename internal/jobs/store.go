package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/corral-dev/corral/internal/safefile"
)

// A held job outlives its daemon: a job holder (headless.HoldMain) runs
// it, its output goes to files in its folder, STATE/jobs/ID, and its row
// there (job.json) says what the next daemon needs to show it and follow
// it: who it is, how to read it, and its outcome once it has one. At
// start a daemon takes every folder's job again: an ended one with its
// events and outcome, a running one followed from its journal on. A
// shutdown ends jobs and forgets them, as before; a hand-over lets the
// running ones go on.

// maxSocketPath is what a unix socket's path may hold.
const maxSocketPath = 107

// jobRow is the name of a job's row in its folder.
const jobRow = "job.json"

// jobRecord is a held job's row.
type jobRecord struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Agent   string    `json:"agent"` // how its stream is read (headless.Options.Agent)
	Argv    []string  `json:"argv"`
	Dir     string    `json:"dir,omitempty"`
	Started time.Time `json:"started"`
	// The options a following daemon needs.
	TimeoutMS    int64  `json:"timeout_ms,omitempty"`
	StallMS      int64  `json:"stall_ms,omitempty"`
	Policy       string `json:"policy,omitempty"`
	PolicySource string `json:"policy_source,omitempty"`
	Relay        bool   `json:"relay,omitempty"` // its stdin takes permission answers
	// Fleet is the fleet job it runs, if any.
	Fleet *api.FleetJob `json:"fleet,omitempty"`
	// Its end, once known.
	Outcome *headless.Outcome `json:"outcome,omitempty"`
	EndedAt time.Time         `json:"ended_at,omitzero"`
}

// Keep is what a job's row keeps that its options hold only parsed: its
// policy's text and the fleet job it runs.
type Keep struct {
	Policy, PolicySource string
	Fleet                *api.FleetJob
}

// Options are what the daemon gives its jobs. The functions are called
// without a job's lock.
type Options struct {
	// StateDir holds the held jobs' folders (STATE/jobs/ID); with none, a
	// job is guarded, not held.
	StateDir string
	// Socket is the daemon's, in each job's environment: what a job left
	// running is found by it.
	Socket string
	// HolderExe is the binary that guards a job ("guard") or holds it
	// ("jobhold").
	HolderExe string
	Logf      func(format string, args ...any)
	// Record takes every change of a job's state.
	Record func(id, name, agent string, c detect.Change)
}

// Host starts the daemon's jobs and takes its held jobs again.
type Host struct{ opts Options }

// New makes a Host.
func New(opts Options) *Host {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.Record == nil {
		opts.Record = func(string, string, string, detect.Change) {}
	}
	return &Host{opts: opts}
}

// onChange is a job's onChange: its changes go to Options.Record.
func (h *Host) onChange(id, name, agent string) func(detect.Change) {
	return func(c detect.Change) { h.opts.Record(id, name, agent, c) }
}

// Start runs a job under the id and name the daemon reserved for it: held
// (it outlives the daemon) when it can be, otherwise guarded (it ends
// with the daemon).
func (h *Host) Start(id, name string, o headless.Options, keep Keep) *Job {
	o.Mark = "CORRAL_JOB=" + id
	o.Env = append(o.Env[:len(o.Env):len(o.Env)], "CORRAL_SOCKET="+h.opts.Socket)
	o.Guard = []string{h.opts.HolderExe, "guard"}
	var onEnd func(headless.Outcome, time.Time)
	if heldMode(o) {
		rec, err := h.hold(id, name, &o, keep)
		if err != nil {
			h.opts.Logf("job %s: %v; it runs guarded, and ends with this daemon", id, err)
		} else {
			onEnd = h.keepOutcome(o.Spool, rec)
		}
	}
	j, ctx, o := newJob(id, name, o, h.onChange(id, name, o.Agent), onEnd)
	j.fleet = keep.Fleet
	j.run(ctx, o)
	return j
}

// dir returns (making it, mode 0700) the folder of held jobs.
func (h *Host) dir() (string, error) {
	if h.opts.StateDir == "" {
		return "", errors.New("no state folder")
	}
	dir := filepath.Join(h.opts.StateDir, "jobs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("jobs folder: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("jobs folder: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("jobs folder: %s must be a folder of yours that only you can open (mode 0700); remove it and try again", dir)
	}
	return dir, nil
}

// heldMode reports whether a job of these options can be held: its
// stream read from a file (pipe mode, not ACP), and holders not turned
// off (CORRAL_NO_HOLDER=1, as for panes).
func heldMode(o headless.Options) bool {
	return o.Mode != "pty-lite" && o.Agent != "acp" && os.Getenv("CORRAL_NO_HOLDER") != "1"
}

// hold makes the job's folder and row, and sets o to run it held.
func (h *Host) hold(id, name string, o *headless.Options, keep Keep) (*jobRecord, error) {
	root, err := h.dir()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, id)
	if sock := filepath.Join(dir, headless.SpoolSocket); len(sock) > maxSocketPath {
		return nil, fmt.Errorf("the job holder's socket path %s is longer than %d bytes; set CORRAL_STATE_DIR to a shorter folder", sock, maxSocketPath)
	}
	_ = os.RemoveAll(dir) // an old job's, by a rare chance of the same id
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("job folder: %w", err)
	}
	rec := &jobRecord{ID: id, Name: name, Agent: o.Agent, Argv: o.Argv, Dir: o.Dir, Started: time.Now(),
		TimeoutMS: o.Timeout.Milliseconds(), StallMS: o.Stall.Milliseconds(),
		Policy: keep.Policy, PolicySource: keep.PolicySource, Relay: o.Prompt != "", Fleet: keep.Fleet}
	if err := saveJobRecord(dir, rec); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	o.Spool, o.Hold, o.Started = dir, []string{h.opts.HolderExe, "jobhold"}, rec.Started
	o.Guard = nil
	return rec, nil
}

func saveJobRecord(dir string, rec *jobRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := safefile.WriteAtomic(filepath.Join(dir, jobRow), b, 0o600); err != nil {
		return fmt.Errorf("job row: %w", err)
	}
	return nil
}

// keepOutcome returns the onEnd of a held job: its row gets its outcome.
func (h *Host) keepOutcome(dir string, rec *jobRecord) func(headless.Outcome, time.Time) {
	return func(out headless.Outcome, when time.Time) {
		r := *rec
		r.Outcome, r.EndedAt = &out, when
		if err := saveJobRecord(dir, &r); err != nil {
			h.opts.Logf("job %s: %v", rec.ID, err)
		}
	}
}

// Adopt takes the held jobs of the state folder again, oldest first:
// take reserves a job's id and name in the daemon's table (a job whose id
// it refuses is left alone), register adds the job under them. A job that
// ended while no daemon ran is read to its end (a while) before Adopt
// returns.
func (h *Host) Adopt(take func(id, name string) error, register func(*Job)) {
	root, err := h.dir()
	if err != nil {
		return
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		h.opts.Logf("jobs folder: %v", err)
		return
	}
	var recs []*jobRecord
	for _, de := range ents {
		if !de.IsDir() {
			continue
		}
		dir := filepath.Join(root, de.Name())
		b, err := safefile.ReadOwned(filepath.Join(dir, jobRow), 1<<20)
		var rec jobRecord
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil || rec.ID != de.Name() {
			h.opts.Logf("job folder %s: no job's row (%v); left alone", dir, err)
			continue
		}
		recs = append(recs, &rec)
	}
	sort.SliceStable(recs, func(i, k int) bool { return recs[i].Started.Before(recs[k].Started) })
	var ended []*Job
	for _, rec := range recs {
		dir := filepath.Join(root, rec.ID)
		if err := take(rec.ID, rec.Name); err != nil {
			h.opts.Logf("job %s (%s) not taken again: %v", rec.ID, rec.Name, err)
			continue
		}
		var j *Job
		if rec.Outcome != nil {
			j = endedJob(dir, rec)
		} else {
			j = h.follow(dir, rec)
			if headless.HeldExited(dir) {
				ended = append(ended, j)
			}
		}
		register(j)
	}
	// A job that ended while no daemon ran is read to its end before the
	// daemon answers: its first listing shows its outcome, not "working".
	deadline := time.After(5 * time.Second)
	for _, j := range ended {
		select {
		case <-j.done:
		case <-deadline:
			return
		}
	}
}

// follow follows a held job that had not ended when its daemon did.
func (h *Host) follow(dir string, rec *jobRecord) *Job {
	id, name, agent := rec.ID, rec.Name, rec.Agent
	o := headless.Options{Agent: rec.Agent, Argv: rec.Argv, Dir: rec.Dir, Mark: "CORRAL_JOB=" + id,
		Timeout: time.Duration(rec.TimeoutMS) * time.Millisecond, Stall: time.Duration(rec.StallMS) * time.Millisecond,
		Spool: dir, Adopt: true, Started: rec.Started}
	if rec.Policy != "" {
		p, err := headless.ParsePolicy(rec.PolicySource, []byte(rec.Policy))
		if err != nil {
			h.opts.Logf("job %s: its policy: %v; its requests come to you", id, err)
		} else {
			o.Policy = p
		}
	}
	j, ctx, o := newJob(id, name, o, h.onChange(id, name, agent), h.keepOutcome(dir, rec))
	j.asks = rec.Relay && o.Policy == nil
	j.fleet = rec.Fleet
	j.run(ctx, o)
	return j
}

// endedJob is a held job that ended before this daemon: its events and
// outcome, as kept.
func endedJob(dir string, rec *jobRecord) *Job {
	j := &Job{id: rec.ID, name: rec.Name, agent: rec.Agent, argv: rec.Argv, dir: rec.Dir, started: rec.Started, cancel: func() {},
		done: make(chan struct{}), grew: make(chan struct{}), quiet: true, spool: dir,
		decision: combine.Decision{State: combine.Working, Source: combine.SourceStream},
		detach:   make(chan struct{}), ran: make(chan struct{}), fleet: rec.Fleet}
	j.since = j.started
	close(j.ran)
	evs, _ := headless.HeldEvents(dir)
	for _, ev := range evs {
		j.event(ev)
	}
	j.finishAt(*rec.Outcome, rec.EndedAt)
	return j
}

// HeldRunning reports whether the job is held and still running: its
// processes are its holder's, not left behind.
func (j *Job) HeldRunning() bool {
	if j.spool == "" {
		return false
	}
	select {
	case <-j.done:
		return false
	default:
		return true
	}
}

// Forget removes an ended held job's folder.
func (j *Job) Forget() error {
	if j.spool == "" {
		return nil
	}
	select {
	case <-j.done:
		if err := os.RemoveAll(j.spool); err != nil {
			return fmt.Errorf("job %s: its folder: %w", j.id, err)
		}
	default: // still running (it did not end at shutdown): the next daemon takes it
	}
	return nil
}
