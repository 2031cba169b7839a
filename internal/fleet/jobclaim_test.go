package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/proctest"
	"github.com/nats-io/nats.go/jetstream"
)

// A host that took a job off the queue and went before starting it: the
// job runs on another host (or on it, back, for a job addressed to it),
// once, within seconds; a host that comes back late to a job its caller
// gave up does not start it.
func TestFleetJobTakenNotStarted(t *testing.T) {
	t.Parallel()
	run, wait := casesAtOnce(t)
	defer wait()
	stop := func(m *Member) { m.cancel(); m.nc.Close() }
	for _, tc := range []struct {
		name  string
		stage takeStage
		// stopped: the host is stopped at stage; else it pauses there
		// until the job ran elsewhere, then goes on.
		stopped bool
		note    string // the caller's note
		within  time.Duration
		// host is the job's (--host), "" for any; then the host that joins
		// once dies went, and should run it.
		host, then string
	}{
		// The queue gives the message to another host after its ack wait.
		{name: "stopped-before-its-claim", stage: takeFetched, stopped: true, within: stoppedAckWait + 5*time.Second, then: "takes"},
		// The caller hears the claim, then silence, and gives it up.
		{name: "stopped-after-its-claim", stage: takeClaimed, stopped: true,
			note: "host dies took the job and stopped answering before starting it (it did not run there); queued again", within: jobSilence + 5*time.Second, then: "takes"},
		{name: "slow-after-its-claim", stage: takeClaimed,
			note: "host dies took the job and stopped answering before starting it (it did not run there); queued again", within: jobSilence + 5*time.Second, then: "takes"},
		// A job for dies alone waits for it, and runs once when it is back:
		// the message of the attempt it claimed comes back to it too.
		{name: "for-it-and-back-after-its-claim", stage: takeClaimed, stopped: true, host: "dies",
			note: "host dies took the job and stopped answering before starting it (it did not run there); queued again", within: jobSilence + 5*time.Second, then: "dies"},
	} {
		run(tc.name, func(t *testing.T) {
			f := startFleet(t, "127.0.0.1:0")
			if tc.stopped {
				f.ackWait = stoppedAckWait
			}
			reached, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			hook := func(m *Member, stage takeStage) {
				if stage != tc.stage {
					return
				}
				first := false
				once.Do(func() { first = true })
				if !first {
					return
				}
				if tc.stopped {
					stop(m)
				}
				close(reached)
				if !tc.stopped {
					<-release
				}
			}
			ld := newFakeLocal()
			dies := f.joinWith("dies", ld, 1, hook)
			// Before dies closes, whatever the test's end.
			free := sync.OnceFunc(func() { close(release) })
			t.Cleanup(free)
			job := submit(func(out func([]byte)) error {
				return f.hm.SubmitJob(context.Background(), "", api.ExecRequest{Agent: "claude", Command: []string{"true"}}, tc.host, 0, out)
			})
			select {
			case <-reached:
			case <-time.After(10 * time.Second * waitSlack):
				t.Fatal("dies never took the job")
			}
			start := time.Now()
			lt := newFakeLocal()
			// dies comes back with the credential the hub gave it.
			token := f.hub.FleetToken()
			if tc.then == "dies" {
				token = *dies.token.Load()
			}
			takes := f.joinWithToken(tc.then, token, lt, 1, nil)
			all := job.wait(t, tc.within*waitSlack, func() string {
				return fmt.Sprintf("the job hangs %v after its host went between taking and starting it", time.Since(start))
			})
			took := time.Since(start)
			free()
			if !strings.Contains(all, "host "+tc.then+" runs the job") || !strings.Contains(job.last(), `"state":"done"`) ||
				!strings.Contains(all, tc.note) {
				t.Fatalf("lines:\n%s", all)
			}
			if took > tc.within {
				t.Errorf("the job ran on %s %v after dies went; want within %v", tc.then, took, tc.within)
			}
			t.Logf("the job ran on %s %v after dies went", tc.then, took.Round(time.Millisecond))
			// The attempt dies claimed never starts, wherever its message
			// goes: back to dies when it goes on, or to takes when the
			// queue delivers it again after its ack wait.
			switch {
			case tc.stage == takeClaimed && tc.stopped:
				waitFor(t, f.jobAckWait()+5*time.Second, tc.then+" to find the attempt dies claimed fenced off", func() bool { return takes.fenced.Load() == 1 })
			case tc.stage == takeClaimed:
				waitFor(t, 5*time.Second, "dies to find the attempt it claimed fenced off", func() bool { return dies.fenced.Load() == 1 })
			}
			if n := ld.jobsStarted.Load(); n != 0 {
				t.Errorf("dies (before it went) started the job %d times, want 0", n)
			}
			if n := lt.jobsStarted.Load(); n != 1 {
				t.Errorf("%s started the job %d times, want 1", tc.then, n)
			}
		})
	}
}

func (f *testFleet) joinWith(name string, local Local, maxJobs int, hook func(*Member, takeStage)) *Member {
	f.t.Helper()
	return f.joinWithToken(name, f.hub.FleetToken(), local, maxJobs, hook)
}

// stoppedAckWait is the ack wait of the tests' fleets whose hosts are
// stopped rather than stalled while they hold a job message.
const stoppedAckWait = 2 * time.Second

// jobAckWait is how long the hosts joinWith joins hold a job message
// before the queue gives it to another.
func (f *testFleet) jobAckWait() time.Duration {
	if f.ackWait > 0 {
		return f.ackWait
	}
	return jobAckWait
}

func (f *testFleet) joinWithToken(name, token string, local Local, maxJobs int, hook func(*Member, takeStage)) *Member {
	f.t.Helper()
	m, err := Join(context.Background(), MemberOptions{Name: name, URLs: []string{f.hub.URL()}, Token: token,
		CAFingerprint: f.hub.Fingerprint(), Local: local, MaxJobs: maxJobs, Watch: true, Version: "test", takeHook: hook, ackWait: f.ackWait})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { m.Close(false) })
	return m
}

// A job its caller gave up before any host took it is never started: the
// host that takes its message later, which never heard the cancel, finds
// it withdrawn.
func TestFleetJobCancelledWhileQueuedNeverStarts(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- f.hm.SubmitJob(ctx, "", api.ExecRequest{Agent: "claude", Command: []string{"true"}}, "later", 0, func([]byte) {})
	}()
	waitFor(t, 5*time.Second, "the job queued for later", func() bool {
		rows, err := f.hub.QueuedJobs(context.Background())
		return err == nil && len(rows) == 1
	})
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("SubmitJob: %v, want context.Canceled", err)
	}
	ll := newFakeLocal()
	later := f.join("later", ll, 1)
	waitFor(t, 10*time.Second, "later to take the message and find it withdrawn", func() bool { return later.fenced.Load() == 1 })
	if n := ll.jobsStarted.Load(); n != 0 {
		t.Fatalf("later started the cancelled job %d times", n)
	}
	// The message is acknowledged once later found it withdrawn, a moment
	// after it counted the fence.
	waitFor(t, 5*time.Second, "the queue empty after later took the message", func() bool {
		rows, err := f.hub.QueuedJobs(context.Background())
		return err == nil && len(rows) == 0
	})
}

// A job whose message was stored on the queue though its caller heard no
// answer (cancelled, or timed out, while the server wrote it) is never
// started: its caller, gone with an error, withdrew it.
func TestFleetJobQueuedUnansweredNeverStarts(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	caller, err := Join(context.Background(), MemberOptions{Name: "calls", URLs: []string{f.hub.URL()}, Token: f.hub.FleetToken(),
		CAFingerprint: f.hub.Fingerprint(), Local: newFakeLocal(), Watch: true, Version: "test",
		queueAnswerLost: func() bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { caller.Close(false) })
	err = caller.SubmitJob(context.Background(), "", api.ExecRequest{Agent: "claude", Command: []string{"true"}}, "later", 0, func([]byte) {})
	if err == nil || !strings.Contains(err.Error(), "queue the job") {
		t.Fatalf("SubmitJob with the queue's answer lost: %v", err)
	}
	rows, err := f.hub.QueuedJobs(context.Background())
	if err != nil || len(rows) != 1 {
		t.Fatalf("the queue: %v %v, want the job's message", rows, err)
	}
	ll := newFakeLocal()
	later := f.join("later", ll, 1)
	waitFor(t, 10*time.Second, "later to take the message and find it withdrawn", func() bool { return later.fenced.Load() == 1 })
	if n := ll.jobsStarted.Load(); n != 0 {
		t.Fatalf("later started the job its caller gave up %d times", n)
	}
}

// A job cancelled as its host starts it (the cancel heard after the host
// looked for one, before it knew the job's local id) is killed there: it
// does not run on with no caller.
func TestFleetJobCancelledAsItStartsIsKilled(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	id := NewJobID()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reached := make(chan bool, 1)
	hook := func(m *Member, stage takeStage) {
		if stage != takeStarting {
			return
		}
		cancel()
		reached <- proctest.WaitFor(5*time.Second*waitSlack, func() bool {
			m.worker.mu.Lock()
			defer m.worker.mu.Unlock()
			_, ok := m.worker.cancelled[id]
			return ok
		})
	}
	ll := newFakeLocal()
	ll.jobHang = true
	runs := f.joinWith("runs", ll, 1, hook)
	err := f.hm.SubmitJob(ctx, id, api.ExecRequest{Agent: "claude", Command: []string{"true"}}, "runs", 0, func([]byte) {})
	if err != context.Canceled {
		t.Fatalf("SubmitJob: %v, want context.Canceled", err)
	}
	select {
	case ok := <-reached:
		if !ok {
			t.Fatal("the cancel never reached runs")
		}
	case <-time.After(10 * time.Second * waitSlack):
		t.Fatal("runs never came to start the job")
	}
	waitFor(t, 5*time.Second, "the job cancelled as it started to be killed on runs", func() bool { return runs.jobs.Load() == 0 })
	if n := ll.jobsStarted.Load(); n > 1 {
		t.Fatalf("runs started the job %d times", n)
	}
}

// A host whose start record went through with its answer lost (its next
// try then meets its own record and is refused) does not start the job,
// and says so: its caller queues it again at once, and the job runs once,
// not ends as lost mid-job.
func TestFleetJobStartAnswerLost(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	var lost atomic.Int32
	ll := newFakeLocal()
	m, err := Join(context.Background(), MemberOptions{Name: "loses", URLs: []string{f.hub.URL()}, Token: f.hub.FleetToken(),
		CAFingerprint: f.hub.Fingerprint(), Local: ll, MaxJobs: 1, Watch: true, Version: "test",
		claimAnswerLost: func(rec claimRecord) bool { return rec.Type == claimStart && lost.Add(1) == 1 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(false) })
	var lines []string
	start := time.Now()
	err = f.hm.SubmitJob(context.Background(), "", api.ExecRequest{Agent: "claude", Command: []string{"true"}}, "", 0, func(b []byte) {
		lines = append(lines, string(b))
	})
	took := time.Since(start)
	all := strings.Join(lines, "\n")
	if err != nil || len(lines) == 0 || !strings.Contains(lines[len(lines)-1], `"state":"done"`) {
		t.Fatalf("SubmitJob: %v; lines:\n%s", err, all)
	}
	if lost.Load() < 1 {
		t.Fatal("no start record's answer was lost")
	}
	if n := ll.jobsStarted.Load(); n != 1 {
		t.Errorf("the job started %d times, want 1", n)
	}
	// Queued again on the host's word, not after its silence: a bound on
	// the time failed under load (5.2 s, the silence 2 s).
	if !strings.Contains(all, "host loses took the job and could not record its start") || strings.Contains(all, "stopped answering") {
		t.Errorf("the job was not queued again on the host's word that it did not start it; lines:\n%s", all)
	}
	t.Logf("the job ran %v after it was queued; lines:\n%s", took.Round(time.Millisecond), all)
}

// A job queued again (its host claimed it and went or stalled) whose
// claim records are gone by the time a host takes it (they are kept 1 h,
// as the output; purged here) still runs, once: a host that finds the
// fence gone says so, and the caller fences and queues it again. Before,
// the host dropped the message as fenced, and the caller waited for good;
// a copy of the first attempt, still queued, ran unseen.
func TestFleetJobClaimRecordsGone(t *testing.T) {
	t.Parallel()
	run, wait := casesAtOnce(t)
	defer wait()
	for _, tc := range []struct {
		name string
		// stopped: the host is stopped once it claimed the job (both
		// attempts' messages wait for it), and comes back once the
		// records are gone; else it stalls there until then.
		stopped bool
		host    string // the job's (--host)
	}{
		{name: "stalled", host: ""},
		{name: "back-to-both-attempts", stopped: true, host: "takes"},
	} {
		run(tc.name, func(t *testing.T) {
			f := startFleet(t, "127.0.0.1:0")
			if tc.stopped {
				f.ackWait = stoppedAckWait
			}
			id := NewJobID()
			job := new(submitted)
			purge := func() error {
				if !proctest.WaitFor(10*time.Second*waitSlack, func() bool { return job.saw("queued again") }) {
					return errors.New("the job was never queued again")
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				s, err := f.hm.js.Stream(ctx, OutputStream)
				if err == nil {
					err = s.Purge(ctx, jetstream.WithPurgeSubject(claimSubject("hub", id)))
				}
				return err
			}
			reached := make(chan error, 1)
			var once sync.Once
			var claimedAt time.Time // set before reached
			hook := func(m *Member, stage takeStage) {
				if stage != takeClaimed {
					return
				}
				once.Do(func() {
					claimedAt = time.Now()
					if tc.stopped {
						m.cancel()
						m.nc.Close()
						reached <- nil
						return
					}
					reached <- purge()
				})
			}
			ll := newFakeLocal()
			first := f.joinWith("takes", ll, 1, hook)
			job.start(func(out func([]byte)) error {
				return f.hm.SubmitJob(context.Background(), id, api.ExecRequest{Agent: "claude", Command: []string{"true"}}, tc.host, 0, out)
			})
			select {
			case err := <-reached:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second * waitSlack):
				t.Fatal("takes never claimed the job")
			}
			lb := newFakeLocal()
			var back *Member
			if tc.stopped {
				if err := purge(); err != nil {
					t.Fatal(err)
				}
				// Back once the first attempt's message is due again: the
				// queue gives it before the second's.
				waitFor(t, f.jobAckWait(), "the first attempt's message due again", func() bool { return time.Since(claimedAt) > f.jobAckWait() })
				back = f.joinWithToken("takes", *first.token.Load(), lb, 1, nil)
			}
			all := job.wait(t, 15*time.Second*waitSlack, func() string { return "the job hangs once its claim records are gone" })
			if !strings.Contains(all, "host takes runs the job") || !strings.Contains(all, `"state":"done"`) ||
				!strings.Contains(all, "host takes found the job's claim records gone (they are kept 1h0m0s); queued again") {
				t.Fatalf("lines:\n%s", all)
			}
			// A copy of the first attempt would run unseen after the
			// caller's end: give it the time to be taken.
			// A copy of the first attempt, queued still, would run unseen
			// after the caller's end: wait for the queue to be empty and
			// the host idle.
			if tc.stopped {
				waitFor(t, 15*time.Second, "the queue empty and takes idle", func() bool {
					rows, err := f.hub.QueuedJobs(context.Background())
					return err == nil && len(rows) == 0 && back.jobs.Load() == 0
				})
			}
			if n := ll.jobsStarted.Load() + lb.jobsStarted.Load(); n != 1 {
				t.Errorf("the job started %d times, want 1", n)
			}
		})
	}
}

// A caller whose withdrawal of a silent host's attempt is not written (the
// fleet does not answer it) does not queue the job again fenced by a record
// the host may have followed: the host, back, starts its attempt after its
// claim, and a new attempt fenced before that start could never be claimed.
// The caller waits on, and the job runs once, seen.
func TestFleetJobWithdrawNotWritten(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	var failed atomic.Int32
	caller, err := Join(context.Background(), MemberOptions{Name: "calls", URLs: []string{f.hub.URL()}, Token: f.hub.FleetToken(),
		CAFingerprint: f.hub.Fingerprint(), Local: newFakeLocal(), Watch: true, Version: "test",
		claimWriteLost: func(rec claimRecord) bool {
			return rec.Type == claimWithdraw && failed.Add(1) <= claimTries
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { caller.Close(false) })
	release := make(chan struct{})
	free := sync.OnceFunc(func() { close(release) })
	t.Cleanup(free)
	var once sync.Once
	hook := func(m *Member, stage takeStage) {
		if stage == takeClaimed {
			once.Do(func() { <-release })
		}
	}
	ll := newFakeLocal()
	f.joinWith("stalls", ll, 1, hook)
	job := submit(func(out func([]byte)) error {
		return caller.SubmitJob(context.Background(), "", api.ExecRequest{Agent: "claude", Command: []string{"true"}}, "", 1, out)
	})
	waitFor(t, 20*time.Second, "the caller's withdrawal to fail", func() bool { return failed.Load() >= claimTries })
	free()
	all := job.wait(t, 15*time.Second*waitSlack, func() string { return "the job hangs after its withdrawal was not written" })
	if !strings.Contains(all, "host stalls runs the job") || !strings.Contains(all, `"state":"done"`) {
		t.Fatalf("lines:\n%s", all)
	}
	if n := ll.jobsStarted.Load(); n != 1 {
		t.Errorf("the job started %d times, want 1", n)
	}
}

// A host that goes silent mid-job once the job's claim records are gone
// (a job longer than the hour they are kept; purged here) has its job end
// as lost on its caller, as any silent host's: the caller's withdrawal,
// refused for a last record older than the one it saw, is written after
// what is left. Before, the caller took the refusal for a record come
// first, and waited for good.
func TestFleetJobSilentAfterClaimRecordsGone(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "127.0.0.1:0")
	id := NewJobID()
	ll := newFakeLocal()
	ll.jobHang = true
	runs := f.join("runs", ll, 1)
	job := submit(func(out func([]byte)) error {
		return f.hm.SubmitJob(context.Background(), id, api.ExecRequest{Agent: "claude", Command: []string{"true"}}, "", 0, out)
	})
	waitFor(t, 10*time.Second, "the job to run on runs", func() bool { return job.saw("host runs runs the job") })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := f.hm.js.Stream(ctx, OutputStream)
	if err == nil {
		err = s.Purge(ctx, jetstream.WithPurgeSubject(claimSubject("hub", id)))
	}
	if err != nil {
		t.Fatal(err)
	}
	runs.cancel()
	runs.nc.Close()
	if all := job.wait(t, (jobSilence+5*time.Second)*waitSlack, func() string { return "the job hangs after its host went silent" }); !strings.Contains(all, "host runs stopped answering mid-job") {
		t.Fatalf("lines:\n%s", all)
	}
}

// submitted is a job submitted in the background: the lines its caller
// hands out as they come, and its end.
type submitted struct {
	mu    sync.Mutex
	lines []string
	done  chan error
}

// submit runs a job's submission in the background, keeping its lines.
func submit(run func(out func([]byte)) error) *submitted {
	j := new(submitted)
	j.start(run)
	return j
}

// start runs the submission of j, which may be read before it starts.
func (j *submitted) start(run func(out func([]byte)) error) {
	j.done = make(chan error, 1)
	go func() {
		j.done <- run(func(b []byte) {
			j.mu.Lock()
			j.lines = append(j.lines, string(b))
			j.mu.Unlock()
		})
	}()
}

// all is the lines so far, one a line.
func (j *submitted) all() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return strings.Join(j.lines, "\n")
}

func (j *submitted) saw(s string) bool { return strings.Contains(j.all(), s) }

// last is the last line so far.
func (j *submitted) last() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.lines) == 0 {
		return ""
	}
	return j.lines[len(j.lines)-1]
}

// wait waits up to d for the submission's end and returns its lines; the
// test fails with hangs() and the lines when it has not ended, or with its
// error.
func (j *submitted) wait(t *testing.T, d time.Duration, hangs func() string) string {
	t.Helper()
	select {
	case err := <-j.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(d):
		t.Fatalf("%s; lines:\n%s", hangs(), j.all())
	}
	return j.all()
}
