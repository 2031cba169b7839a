package paneset

import (
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	rulesdata "github.com/corral-dev/corral/agents"
	"github.com/corral-dev/corral/internal/holder"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/panestore"
	"github.com/corral-dev/corral/internal/proctest"
	"github.com/corral-dev/corral/internal/rules"
)

// The test binary doubles as the panes' holder.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "hold" {
		os.Exit(holder.Main(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// testJob is the set's other kind, as the server's headless job is to it:
// something that ends.
type testJob struct {
	done   chan struct{}
	closed chan struct{}
	once   sync.Once
}

func newTestJob() *testJob { return &testJob{done: make(chan struct{}), closed: make(chan struct{})} }

func (j *testJob) Done() <-chan struct{} { return j.done }
func (j *testJob) Close(time.Duration) {
	j.once.Do(func() { close(j.closed); close(j.done) })
}

// ext is what a test keeps beside a pane.
type ext struct{ mark string }

type testSet = Set[ext, *testJob]

// removal is one call of Options.Removed.
type removal struct {
	id   string
	pane bool
}

type removals struct {
	mu   sync.Mutex
	list []removal
}

func (r *removals) add(id string, e *Entry[ext], j *testJob) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, removal{id, e != nil && j == nil})
}

func (r *removals) get() []removal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.list)
}

func ruleSet(t *testing.T) *rules.Set {
	t.Helper()
	set, errs := rules.Loader{Embedded: rulesdata.Rules}.Load(nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return set
}

// newTestSet is a set over stateDir whose panes run under holders of this
// test binary.
func newTestSet(t *testing.T, stateDir string, rm *removals) *testSet {
	t.Helper()
	set := ruleSet(t)
	opts := Options[ext, *testJob]{StateDir: stateDir, Socket: stateDir + "/corral.sock", HolderExe: os.Args[0], Logf: t.Logf,
		KillGrace: time.Second, Rules: func() *rules.Set { return set },
		FromRow: func(row panestore.Row) func(*Entry[ext]) {
			return func(e *Entry[ext]) { e.Ext.mark = "from row " + row.ID }
		}}
	if rm != nil {
		opts.Removed = rm.add
	}
	return New(opts)
}

// endAll kills what a test's pane left, whatever the test did: its
// program's group and its holder.
func endAll(t *testing.T, p *pane.Pane) {
	_, hpid := p.Held()
	// Only if they are still the processes the test started: a pid ended
	// long ago may name another package's process by now (a test's
	// SIGKILL to a recycled pid killed other packages' tests' processes).
	// Cleanups run last first: the program's group, then its holder.
	proctest.KillAtCleanup(t, hpid)
	proctest.KillGroupAtCleanup(t, p.Info().PID)
}

func startSleep(t *testing.T, s *testSet, name string, o StartOptions[ext]) *pane.Pane {
	t.Helper()
	p, err := s.Start(pane.Config{Name: name, Argv: []string{"sh", "-c", "echo ready-" + name + "; exec sleep 300"}, Cols: 80, Rows: 24}, o)
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	endAll(t, p)
	return p
}

// Panes and jobs share one space of ids and names and one start order: a
// reference finds the kind that has it, a taken name is refused to either
// kind, a running one is removed only by force, and a removal frees its
// name and is told to Options.Removed.
func TestPanesAndJobsShareOneRoster(t *testing.T) {
	rm := &removals{}
	s := newTestSet(t, t.TempDir(), rm)
	pa := startSleep(t, s, "first", StartOptions[ext]{Init: func(e *Entry[ext]) { e.Ext.mark = "init" }})
	jid, _, err := s.Reserve("second")
	if err != nil {
		t.Fatal(err)
	}
	job := newTestJob()
	if !s.RegisterJob(jid, "second", job) {
		t.Fatal("the job was not registered")
	}
	pc := startSleep(t, s, "third", StartOptions[ext]{})

	for _, name := range []string{"first", pa.ID(), "second", jid} {
		if _, _, err := s.Reserve(name); err == nil {
			t.Errorf("the name %s was given again", name)
		}
	}
	for _, tc := range []struct {
		ref, id string
		job     bool
	}{
		{"first", pa.ID(), false}, {pa.ID(), pa.ID(), false}, {"second", jid, true}, {jid, jid, true}, {"third", pc.ID(), false},
	} {
		u, err := s.Find(tc.ref)
		if err != nil || u.ID != tc.id || (u.Job != nil) != tc.job || (u.Pane != nil) == tc.job {
			t.Errorf("Find %s: %+v %v, want %s (a job: %v)", tc.ref, u, err, tc.id, tc.job)
		}
		if _, err := s.FindPane(tc.ref); (err == nil) == tc.job {
			t.Errorf("FindPane %s: %v", tc.ref, err)
		}
	}
	if e, _ := s.FindPane("first"); e == nil || e.Ext.mark != "init" || e.Token == "" || e.Held == nil {
		t.Errorf("the first pane's entry: %+v", e)
	}
	if _, err := s.Find("nothing"); err == nil || err.Error() != "no pane named nothing; see corral ls" {
		t.Errorf("Find of nothing: %v", err)
	}
	order := func() string {
		var ids []string
		for _, u := range s.List() {
			ids = append(ids, u.ID)
		}
		return strings.Join(ids, " ")
	}
	if got, want := order(), strings.Join([]string{pa.ID(), jid, pc.ID()}, " "); got != want {
		t.Errorf("the list: %s, want %s", got, want)
	}
	if n := s.Len(); n != 3 {
		t.Errorf("Len: %d, want 3", n)
	}

	for _, ref := range []string{"second", "first"} {
		if err := s.Remove(ref, false); !errors.Is(err, ErrStillRunning) {
			t.Errorf("Remove %s while it runs: %v, want ErrStillRunning", ref, err)
		}
	}
	if err := s.Remove("second", true); err != nil {
		t.Fatal(err)
	}
	select {
	case <-job.closed:
	default:
		t.Error("the job removed by force was not ended")
	}
	if err := s.Remove("first", true); err != nil {
		t.Fatal(err)
	}
	select {
	case <-pa.Done():
	default:
		t.Error("the pane removed by force has not ended")
	}
	if got, want := order(), pc.ID(); got != want {
		t.Errorf("the list after the removals: %s, want %s", got, want)
	}
	if got, want := rm.get(), []removal{{jid, false}, {pa.ID(), true}}; !slices.Equal(got, want) {
		t.Errorf("Removed was told %v, want %v", got, want)
	}
	for _, name := range []string{"first", "second"} {
		if err := s.Taken(name); err != nil {
			t.Errorf("the removed %s's name: %v", name, err)
		}
	}
}

// A --rm pane leaves the set once its program exits, and Removed is told.
func TestRemoveOnExit(t *testing.T) {
	rm := &removals{}
	s := newTestSet(t, t.TempDir(), rm)
	p, err := s.Start(pane.Config{Name: "brief", Argv: []string{"sh", "-c", "exit 3"}}, StartOptions[ext]{Remove: true})
	if err != nil {
		t.Fatal(err)
	}
	endAll(t, p)
	if !proctest.WaitFor(10*time.Second, func() bool { return s.Len() == 0 }) {
		t.Fatalf("the --rm pane is still listed: %d", s.Len())
	}
	if got, want := rm.get(), []removal{{p.ID(), true}}; !slices.Equal(got, want) {
		t.Errorf("Removed was told %v, want %v", got, want)
	}
}

// The shutdown waits for a start in flight and ends it with the rest; no
// start is taken once it has begun.
func TestCollectWaitsForStartsInFlight(t *testing.T) {
	s := newTestSet(t, t.TempDir(), nil)
	id, _, err := s.Reserve("late")
	if err != nil {
		t.Fatal(err)
	}
	collected := make(chan []*testJob, 1)
	go func() {
		_, jobs := s.Collect()
		collected <- jobs
	}()
	if !proctest.WaitFor(5*time.Second, s.Closing) {
		t.Fatal("the shutdown did not begin")
	}
	if _, _, err := s.Reserve("later"); err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("a start during the shutdown: %v", err)
	}
	select {
	case <-collected:
		t.Fatal("Collect did not wait for the start in flight")
	default:
	}
	j := newTestJob()
	if !s.RegisterJob(id, "late", j) {
		t.Fatal("the start in flight was refused")
	}
	select {
	case jobs := <-collected:
		if len(jobs) != 1 || jobs[0] != j {
			t.Errorf("collected %v, want the late job", jobs)
		}
	case <-time.After(SpawnWait):
		t.Fatal("Collect did not return")
	}
}

// A pane handed over outlives its set under its holder and is adopted by
// the next set over the same state folder: same id, name, program and
// screen. Once its holder and program are gone, the next set keeps it as
// lost, and Restore starts it again under its id and name.
func TestHandOverAdoptAndRestore(t *testing.T) {
	dir := t.TempDir()
	a := newTestSet(t, dir, nil)
	p := startSleep(t, a, "kept", StartOptions[ext]{})
	id, pid := p.ID(), p.Info().PID
	if held, _ := p.Held(); !held {
		t.Fatal("the pane has no holder")
	}
	if !proctest.WaitFor(10*time.Second, func() bool { return strings.Contains(strings.Join(p.Snapshot().Lines, "\n"), "ready-kept") }) {
		t.Fatalf("the program's output never showed: %q", p.Snapshot().Lines)
	}
	if !a.HandOver() || a.HandOver() {
		t.Fatal("HandOver: want true once, then false")
	}
	a.StartTable()
	panes, _ := a.Collect()
	for _, q := range panes {
		a.EndPane(q)
	}
	a.StopTable()
	if !proctest.Alive(pid) {
		t.Fatal("the handed-over pane's program ended")
	}

	b := newTestSet(t, dir, nil)
	b.Adopt(func() map[string]panestore.Logged { return nil })
	e, err := b.FindPane("kept")
	if err != nil {
		t.Fatalf("not adopted: %v (lost: %+v)", err, b.Lost())
	}
	endAll(t, e.P)
	if e.P.ID() != id || e.P.Info().PID != pid || e.Ext.mark != "from row "+id || e.Held == nil {
		t.Errorf("adopted %s pid %d mark %q, want %s pid %d from its row", e.P.ID(), e.P.Info().PID, e.Ext.mark, id, pid)
	}
	if !proctest.WaitFor(10*time.Second, func() bool { return strings.Contains(strings.Join(e.P.Snapshot().Lines, "\n"), "ready-kept") }) {
		t.Errorf("the adopted pane's screen: %q", e.P.Snapshot().Lines)
	}

	// Its holder and program gone, as after a reboot.
	_, hpid := e.P.Held()
	b.HandOver()
	b.StartTable()
	panes, _ = b.Collect()
	for _, q := range panes {
		b.EndPane(q)
	}
	b.StopTable()
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(hpid, syscall.SIGKILL)
	if !proctest.WaitFor(10*time.Second, func() bool { return !panestore.HolderAlive(hpid) && !proctest.Alive(pid) }) {
		t.Fatal("the holder or the program did not end")
	}

	c := newTestSet(t, dir, nil)
	c.Adopt(func() map[string]panestore.Logged { return nil })
	if n := c.Len(); n != 0 {
		t.Fatalf("%d panes adopted, want none", n)
	}
	lost := c.Lost()
	if len(lost) != 1 || lost[0].ID != id || lost[0].State != panestore.StateLost {
		t.Fatalf("lost: %+v", lost)
	}
	if _, missing := c.Restore([]string{"nothing"}, false); !slices.Equal(missing, []string{"nothing"}) {
		t.Errorf("restore of nothing: missing %v", missing)
	}
	out, missing := c.Restore(nil, false)
	if len(missing) != 0 || len(out) != 1 || out[0].ID != id || out[0].Error != "" {
		t.Fatalf("restore: %+v, missing %v", out, missing)
	}
	e, err = c.FindPane("kept")
	if err != nil {
		t.Fatal(err)
	}
	endAll(t, e.P)
	if e.Ext.mark != "from row "+id || e.P.Info().PID == pid {
		t.Errorf("restored pane: mark %q, pid %d (the lost one's was %d)", e.Ext.mark, e.P.Info().PID, pid)
	}
	if len(c.Lost()) != 0 {
		t.Errorf("still lost after the restore: %+v", c.Lost())
	}
	if err := c.Remove("kept", true); err != nil {
		t.Fatal(err)
	}
}
