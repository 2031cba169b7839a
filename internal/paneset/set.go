package paneset

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/holder"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/panestore"
	"github.com/corral-dev/corral/internal/roster"
	"github.com/corral-dev/corral/internal/rules"
)

// Job is what the set needs of the server's other kind, a headless job:
// the set keeps jobs beside the panes, in one space of ids and names and
// one start order, and knows nothing else of them.
type Job interface {
	comparable
	Done() <-chan struct{}
	Close(grace time.Duration)
}

// Options are what the server gives the set. The functions are called
// without the set's lock.
type Options[X any, J Job] struct {
	// StateDir holds the pane table, the holders' sockets and the
	// integrations' files; Socket is the daemon's, in each pane's
	// environment.
	StateDir string
	Socket   string
	// HolderExe is the binary a holder runs.
	HolderExe string
	Logf      func(format string, args ...any)
	// KillGrace is how long a pane gets between SIGHUP and SIGKILL when
	// it is ended.
	KillGrace time.Duration
	// Rules are the rules in force, for a new or adopted pane.
	Rules func() *rules.Set
	// Record takes every change of a pane's state.
	Record func(id, name, agent string, c detect.Change)
	// Removed is told of a pane or job that left the set (Remove): the
	// entry, or the job.
	Removed func(id string, e *Entry[X], j J)
	// FromRow reads what the server keeps of an adopted or restored
	// pane's row, and returns what gives its entry Ext before it is
	// registered.
	FromRow func(row panestore.Row) func(e *Entry[X])
	// Saved is what the table keeps of Ext.
	Saved func(e *Entry[X]) (*panestore.Policy, *panestore.Worktree)
}

// Set is the daemon's panes, and its jobs beside them.
type Set[X any, J Job] struct {
	opts Options[X, J]

	// mu guards the fields that follow.
	mu    sync.Mutex
	panes map[string]*Entry[X] // by id
	jobs  map[string]J         // by id
	// roster is the panes' and jobs' ids and names, in start order, with
	// those of starts in flight (outside mu) reserved.
	roster *roster.Roster
	// collected is set once the shutdown has taken the list of panes and
	// jobs to end; closing once it began.
	collected, closing bool

	// spawning counts the starts in flight; Collect waits for them (a
	// while) so that what they start is ended with the rest.
	spawning sync.WaitGroup

	table       *panestore.Store
	handingOver atomic.Bool

	// tmux are the tmux servers watched (see tmux.go).
	tmux tmuxWatches

	holderLogOnce sync.Once
	holderLog     *os.File
	holders       *holder.Pool // new panes' holder processes
}

// New makes an empty set over the pane table in opts.StateDir (read by
// Adopt).
func New[X any, J Job](opts Options[X, J]) *Set[X, J] {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	s := &Set[X, J]{opts: opts, panes: map[string]*Entry[X]{}, jobs: map[string]J{}, roster: roster.New()}
	s.table = panestore.New(opts.StateDir, opts.Logf, s.tableRows)
	s.table.WatchChanges(s.changedRows)
	return s
}

// SpawnWait bounds how long the shutdown waits for the starts in flight.
const SpawnWait = 5 * time.Second

func (s *Set[X, J]) rules() *rules.Set {
	if s.opts.Rules == nil {
		return nil
	}
	return s.opts.Rules()
}

// Reserve takes an id and the name for a pane or job about to start, and
// gives the rules in force; Register, RegisterJob or Unreserve gives them
// back.
func (s *Set[X, J]) Reserve(name string) (string, *rules.Set, error) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return "", nil, errors.New("the daemon is shutting down")
	}
	id, err := s.roster.Reserve(name)
	if err != nil {
		s.mu.Unlock()
		return "", nil, err
	}
	s.spawning.Add(1)
	s.mu.Unlock()
	return id, s.rules(), nil
}

// ReserveAs is Reserve, keeping id when it is free (a restored pane keeps
// its id, a job taken again its own).
func (s *Set[X, J]) ReserveAs(id, name string) (string, *rules.Set, error) {
	got, set, err := s.Reserve(name)
	if err != nil || id == "" || id == got {
		return got, set, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.roster.Rereserve(got, id), set, nil
}

// Unreserve gives back what Reserve took for a start that failed.
func (s *Set[X, J]) Unreserve(id string) {
	s.mu.Lock()
	s.roster.Unreserve(id)
	s.mu.Unlock()
	s.spawning.Done()
}

// Register adds a started pane under its reserved id. Once the shutdown
// has taken its list of panes to end, it ends the pane instead.
func (s *Set[X, J]) Register(id string, e *Entry[X]) bool {
	return s.admit(id, e.Name, func() { s.panes[id] = e }, e.P.Close)
}

// RegisterJob adds a started job under its reserved id, as Register does
// a pane.
func (s *Set[X, J]) RegisterJob(id, name string, j J) bool {
	return s.admit(id, name, func() { s.jobs[id] = j }, j.Close)
}

// admit gives a reserved id to what add puts in its table, in start
// order, or ends it with end when the shutdown has begun.
func (s *Set[X, J]) admit(id, name string, add func(), end func(grace time.Duration)) bool {
	defer s.spawning.Done()
	s.mu.Lock()
	if s.collected {
		s.roster.Unreserve(id)
		s.mu.Unlock()
		end(s.opts.KillGrace)
		return false
	}
	add()
	s.roster.Add(id, name)
	s.mu.Unlock()
	return true
}

// Unit is a pane's entry or a job, exactly one of them.
type Unit[X any, J Job] struct {
	ID   string
	Pane *Entry[X]
	Job  J // the zero J when Pane is set
}

// done is closed when the pane's program or the job has ended.
func (u Unit[X, J]) done() <-chan struct{} {
	if u.Pane == nil {
		return u.Job.Done()
	}
	return u.Pane.P.Done()
}

// ErrNoPane says no pane or job has the id or name ref.
func ErrNoPane(ref string) error {
	return fmt.Errorf("no pane named %s; see corral ls", ref)
}

// Find resolves an id or a name to a pane or a job.
func (s *Set[X, J]) Find(ref string) (Unit[X, J], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.byIDLocked(ref); ok {
		return u, nil
	}
	if id, ok := s.roster.Named(ref); ok {
		if u, ok := s.byIDLocked(id); ok {
			return u, nil
		}
	}
	return Unit[X, J]{}, ErrNoPane(ref)
}

func (s *Set[X, J]) byIDLocked(id string) (Unit[X, J], bool) {
	if e, ok := s.panes[id]; ok {
		return Unit[X, J]{ID: id, Pane: e}, true
	}
	if j, ok := s.jobs[id]; ok {
		return Unit[X, J]{ID: id, Job: j}, true
	}
	return Unit[X, J]{}, false
}

// Get is the pane or job of that id (not a name).
func (s *Set[X, J]) Get(id string) (Unit[X, J], bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byIDLocked(id)
}

// FindPane resolves an id or a name to a pane; a job is none.
func (s *Set[X, J]) FindPane(ref string) (*Entry[X], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.panes[ref]; ok {
		return e, nil
	}
	if id, ok := s.roster.Named(ref); ok {
		if e, ok := s.panes[id]; ok {
			return e, nil
		}
	}
	return nil, ErrNoPane(ref)
}

// FindStarting is FindPane, waiting (at most SpawnWait) for a pane that is
// being started: its program runs, and its hooks report, before its
// holder has answered the daemon.
func (s *Set[X, J]) FindStarting(ref string) (*Entry[X], error) {
	deadline := time.Now().Add(SpawnWait)
	for {
		e, err := s.FindPane(ref)
		if err == nil {
			return e, nil
		}
		s.mu.Lock()
		starting := s.roster.Reserved(ref)
		s.mu.Unlock()
		if !starting || time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Job is the job of that id.
func (s *Set[X, J]) Job(id string) (J, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	return j, ok
}

// List returns the panes and jobs in start order.
func (s *Set[X, J]) List() []Unit[X, J] {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Unit[X, J], 0, s.roster.Len())
	for id := range s.roster.All() {
		if j, ok := s.jobs[id]; ok {
			out = append(out, Unit[X, J]{ID: id, Job: j})
		} else {
			out = append(out, Unit[X, J]{ID: id, Pane: s.panes[id]})
		}
	}
	return out
}

// Panes returns the panes in start order, without the jobs.
func (s *Set[X, J]) Panes() []*Entry[X] {
	s.mu.Lock()
	defer s.mu.Unlock()
	return inStartOrder(s.roster, s.panes)
}

// Jobs returns the jobs in start order.
func (s *Set[X, J]) Jobs() []J {
	s.mu.Lock()
	defer s.mu.Unlock()
	return inStartOrder(s.roster, s.jobs)
}

// inStartOrder is table's values in start order (the roster has panes
// and jobs together), skipping the ids of the other kind.
func inStartOrder[T any](r *roster.Roster, table map[string]T) []T {
	out := make([]T, 0, len(table))
	for id := range r.All() {
		if v, ok := table[id]; ok {
			out = append(out, v)
		}
	}
	return out
}

// Len is the number of panes and jobs.
func (s *Set[X, J]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.panes) + len(s.jobs)
}

// Taken says why name cannot be given to a new pane or job (nil: it can).
func (s *Set[X, J]) Taken(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.roster.Taken(name)
}

// ErrStillRunning is returned by Remove for a pane whose program runs.
var ErrStillRunning = errors.New("is still running; end it with corral kill, or remove it with corral rm --force")

// Remove forgets an ended pane or job: its name is free again, and what
// it held (screen, events, watchers) goes with it; Options.Removed is
// told. With force, a running one is ended first.
func (s *Set[X, J]) Remove(ref string, force bool) error {
	u, err := s.Find(ref)
	if err != nil {
		return err
	}
	select {
	case <-u.done():
	default:
		if !force {
			return fmt.Errorf("pane %s %w", ref, ErrStillRunning)
		}
		if u.Pane == nil {
			u.Job.Close(s.opts.KillGrace)
		} else {
			u.Pane.P.Close(s.opts.KillGrace)
		}
	}
	id := u.ID
	s.mu.Lock()
	if j, ok := s.jobs[id]; u.Pane == nil && ok && j == u.Job {
		delete(s.jobs, id)
	} else if u.Pane != nil && s.panes[id] == u.Pane {
		delete(s.panes, id)
	} else {
		s.mu.Unlock()
		return nil // removed meanwhile
	}
	s.roster.Remove(id)
	s.mu.Unlock()
	if s.opts.Removed != nil {
		s.opts.Removed(id, u.Pane, u.Job)
	}
	return nil
}

// Closing says whether the shutdown has begun: no start is taken.
func (s *Set[X, J]) Closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// Collect begins the shutdown: no start is taken from now on, the starts
// in flight are waited for (at most SpawnWait), and it returns the panes
// and jobs to end; one registered later is ended by Register.
func (s *Set[X, J]) Collect() ([]*pane.Pane, []J) {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	spawned := make(chan struct{})
	go func() {
		s.spawning.Wait()
		close(spawned)
	}()
	select {
	case <-spawned:
	case <-time.After(SpawnWait):
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.collected = true
	panes := make([]*pane.Pane, 0, len(s.panes))
	for _, e := range s.panes {
		panes = append(panes, e.P)
	}
	jobs := make([]J, 0, len(s.jobs))
	for _, j := range s.jobs {
		jobs = append(jobs, j)
	}
	return panes, jobs
}

// HandOver marks the set as handed over: from now on EndPane lets a pane
// under a holder go, for the next daemon. It reports false when it was
// already.
func (s *Set[X, J]) HandOver() bool { return s.handingOver.CompareAndSwap(false, true) }

// HandingOver says whether HandOver was called.
func (s *Set[X, J]) HandingOver() bool { return s.handingOver.Load() }

// EndPane ends a pane at shutdown; at a hand-over, a pane under a holder
// is let go instead, for the next daemon.
func (s *Set[X, J]) EndPane(p *pane.Pane) {
	if s.handingOver.Load() && p.Detach() {
		return
	}
	p.Close(s.opts.KillGrace)
}

// MaxNameLen bounds a pane's name.
const MaxNameLen = 64
