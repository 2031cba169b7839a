package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-dev/corral/internal/api"
)

// JobSilence is how long a host running a job may say nothing (it says
// "alive" every fifth of it) before the job is taken for lost.
const JobSilence = 5 * time.Second

// jobSilence is JobSilence, shorter in this package's tests, which wait it
// out (set in their TestMain, before any test runs).
var jobSilence = JobSilence

// JobRequest is a job on the work queue.
type JobRequest struct {
	ID      string          `json:"id"`
	Attempt int             `json:"attempt"`
	From    string          `json:"from"`
	Exec    api.ExecRequest `json:"exec"`
	// Fence is the sequence of the job's last claim record when the
	// caller queued this attempt (0: none): the attempt's claim is written
	// only after it (see claimRecord).
	Fence uint64 `json:"fence,omitempty"`
}

const hdrAttempt = "Corral-Attempt"

// hdrEvent numbers a job's event lines from its start (the job's own
// numbering): a caller drops the lines it has had already, when a host
// reports its job again after a daemon restart.
const hdrEvent = "Corral-Event"

// worker state.
type worker struct {
	mu        sync.Mutex
	running   map[string]string    // fleet job id → local job id
	cancelled map[string]time.Time // fleet job ids cancelled
	freed     chan struct{}
	sub       *nats.Subscription
}

func (m *Member) startWorker() {
	w := &worker{running: map[string]string{}, cancelled: map[string]time.Time{}, freed: make(chan struct{}, 1)}
	m.worker = w
	sub, err := m.nc.Subscribe(subjJobCtl+"*", func(msg *nats.Msg) {
		id := strings.TrimPrefix(msg.Subject, subjJobCtl)
		w.mu.Lock()
		w.cancelled[id] = time.Now()
		for k, t := range w.cancelled {
			if time.Since(t) > time.Hour {
				delete(w.cancelled, k)
			}
		}
		local := w.running[id]
		w.mu.Unlock()
		if local != "" {
			m.local("POST", "/v1/panes/"+url.PathEscape(local)+"/kill", []byte(`{"signal":"TERM"}`))
		}
	})
	if err != nil {
		m.setErr(err)
	}
	w.sub = sub
	m.reattachJobs()
	m.goLoop(m.workLoop)
}

// reattachRecent is how long after its end a fleet job this host ran is
// reported again by a daemon that starts: its caller may still wait.
const reattachRecent = time.Minute

// reattachJobs reports again the fleet jobs this host's last daemon ran
// and this one took over (held jobs outlive their daemon): their callers
// hear them go on under the same attempt, and nothing runs twice.
func (m *Member) reattachJobs() {
	for _, p := range m.localJobs() {
		f := p.Fleet
		if p.ExitCode != nil {
			at, err := time.Parse(time.RFC3339Nano, p.Since)
			if err != nil || time.Since(at) > reattachRecent {
				continue
			}
		}
		m.jobs.Add(1)
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			defer m.jobDone()
			m.reportJob(JobRequest{ID: f.ID, Attempt: f.Attempt, From: f.From}, p.ID)
		}()
	}
}

// localJobs are this host's jobs that run fleet jobs.
func (m *Member) localJobs() []api.Pane {
	status, body := m.local("GET", "/v1/panes", nil)
	var ps []api.Pane
	if status/100 != 2 || json.Unmarshal(body, &ps) != nil {
		return nil
	}
	out := ps[:0]
	for _, p := range ps {
		if p.Backend == "headless" && p.Fleet != nil && p.Fleet.ID != "" {
			out = append(out, p)
		}
	}
	return out
}

// jobDone frees a job's place.
func (m *Member) jobDone() {
	m.jobs.Add(-1)
	select {
	case m.worker.freed <- struct{}{}:
	default:
	}
}

func (m *Member) stopWorker() {
	if m.worker != nil && m.worker.sub != nil {
		_ = m.worker.sub.Unsubscribe()
	}
}

// MaxJobs is how many fleet jobs this host runs at once (0: none).
func (m *Member) MaxJobs() int { return int(m.maxJobs.Load()) }

// jobLimit is MaxJobs, or 0 when the host's credential takes no jobs.
func (m *Member) jobLimit() int {
	if r := m.rights.Load(); r != nil && !r.Jobs {
		return 0
	}
	return m.MaxJobs()
}

// Rights are what this host's credential allows, once a hub said (ok
// false until then, and on a team's own NATS, where nothing says).
func (m *Member) Rights() (Rights, bool) {
	if r := m.rights.Load(); r != nil {
		return *r, true
	}
	return Rights{}, false
}

// askRights asks the hubs what this host's credential allows, until one
// answers. On a team's own NATS no one does: nothing is known then, and
// the server alone decides.
func (m *Member) askRights() {
	defer close(m.rightsAsked)
	for silent := 0; m.ctx.Err() == nil; {
		ctx, cancel := context.WithTimeout(m.ctx, 3*time.Second)
		msg, err := m.nc.RequestWithContext(ctx, subjRights+m.o.Name, nil)
		cancel()
		if err == nil {
			var r Rights
			if json.Unmarshal(msg.Data, &r) != nil {
				m.badIn.Add(1)
				return
			}
			m.rights.Store(&r)
			if !r.Jobs && m.MaxJobs() > 0 {
				m.o.Logf("fleet: this host's credential is observe-only: it takes no jobs (corral fleet invite %s --observe-only --take-jobs on the hub gives one that does)", m.o.Name)
			}
			return
		}
		wait := 2 * time.Second
		// No hub answers: a team's own NATS, or a cluster's hubs not
		// serving yet. A few tries; the worker waits for them.
		if errors.Is(err, nats.ErrNoResponders) && m.nc.IsConnected() {
			if silent++; silent == 3 {
				return
			}
			wait = time.Second
		}
		select {
		case <-m.ctx.Done():
		case <-time.After(wait):
		}
	}
}

// serveRights answers a host's question of what its credential allows.
func (m *Member) serveRights(msg *nats.Msg) {
	host := strings.TrimPrefix(msg.Subject, subjRights)
	if CheckName(host) != nil || msg.Reply == "" {
		m.badIn.Add(1)
		return
	}
	b, _ := json.Marshal(m.o.Rights(host))
	_ = msg.Respond(b)
}

// SetMaxJobs changes how many fleet jobs this host runs at once, at once:
// the next heartbeat says so, and a lower limit lets the running jobs end.
func (m *Member) SetMaxJobs(n int) {
	m.maxJobs.Store(int32(max(n, 0)))
	if m.worker == nil {
		return
	}
	select {
	case m.worker.freed <- struct{}{}:
	default:
	}
}

// local makes a request to this host's own API and returns status and body.
func (m *Member) local(method, path string, body []byte) (int, []byte) {
	req, _ := http.NewRequest(method, "http://corral"+path, bytes.NewReader(body))
	if len(body) > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	m.o.Local.Handler().ServeHTTP(rec, req)
	return rec.status, rec.body.Bytes()
}

// workLoop takes jobs while the host has capacity: first those addressed
// to it, then any.
func (m *Member) workLoop() {
	select {
	case <-m.rightsAsked:
	case <-m.ctx.Done():
		return
	}
	var cons []jetstream.Consumer
	for m.ctx.Err() == nil && cons == nil {
		if m.jobLimit() == 0 {
			// No consumer on the queue while the host takes no jobs.
			select {
			case <-m.ctx.Done():
			case <-m.worker.freed:
			case <-time.After(time.Second):
			}
			continue
		}
		ackWait := jobAckWait
		if m.o.ackWait > 0 {
			ackWait = m.o.ackWait
		}
		ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
		own, err1 := m.js.CreateOrUpdateConsumer(ctx, JobsStream, jetstream.ConsumerConfig{Durable: jobConsumer(m.o.Name),
			FilterSubject: subjJobFor + m.o.Name, AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait})
		anyc, err2 := m.js.CreateOrUpdateConsumer(ctx, JobsStream, jetstream.ConsumerConfig{Durable: anyJobsConsumer,
			FilterSubject: subjJobAny, AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait})
		cancel()
		if err := errors.Join(err1, err2); err != nil {
			m.setErr(fmt.Errorf("job queue: %w", err))
			select {
			case <-m.ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		cons = []jetstream.Consumer{own, anyc}
	}
	w := m.worker
	for m.ctx.Err() == nil {
		if int(m.jobs.Load()) >= m.jobLimit() {
			select {
			case <-m.ctx.Done():
				return
			case <-w.freed:
			case <-time.After(time.Second):
			}
			continue
		}
		took := false
		for _, c := range cons {
			msg, err := c.Next(jetstream.FetchMaxWait(400 * time.Millisecond))
			if err != nil {
				continue
			}
			m.takeJob(msg)
			took = true
			break
		}
		if !took && !m.nc.IsConnected() {
			select {
			case <-m.ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
}

func (m *Member) takeJob(msg jetstream.Msg) {
	var jr JobRequest
	if err := json.Unmarshal(msg.Data(), &jr); err != nil || jr.ID == "" || CheckName(strings.ReplaceAll(jr.ID, ".", "x")) != nil || CheckName(jr.From) != nil {
		m.badIn.Add(1)
		_ = msg.Term()
		return
	}
	m.hook(takeFetched)
	subject := claimSubject(jr.From, jr.ID)
	claimed, err := m.writeClaim(subject, claimRecord{Type: claimClaim, Host: m.o.Name, Attempt: jr.Attempt}, jr.Fence, claimTries)
	if errors.Is(err, errFenced) {
		// A copy of an attempt another host claimed, or its caller gave
		// up: the queue delivered it again.
		m.fenced.Add(1)
		if claimed < jr.Fence {
			// Or the records it was fenced by are gone (kept as long as
			// the output): its caller, which waits for a claim, hears it.
			m.publisher(jr).control(map[string]any{"type": "fence_gone", "last": claimed})
		}
		m.ackJob(msg)
		return
	}
	if err != nil {
		return // delivered again after jobAckWait, to someone
	}
	m.hook(takeClaimed)
	// The claim decides: a message that goes to another host all the
	// same (the acknowledgement lost) meets it there.
	m.ackJob(msg)
	m.jobs.Add(1)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer m.jobDone()
		m.runJob(jr, subject, claimed)
	}()
}

func (m *Member) ackJob(msg jetstream.Msg) {
	ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
	_ = msg.DoubleAck(ctx)
	cancel()
}

func (m *Member) hook(stage takeStage) {
	if h := m.o.takeHook; h != nil {
		h(m, stage)
	}
}

// NewJobID returns a fleet job's id.
func NewJobID() string { return "fj" + secret()[:16] }

// CancelJob asks whichever host runs a fleet job to end it.
func (m *Member) CancelJob(id string) error {
	return m.nc.Publish(subjJobCtl+id, []byte("cancel"))
}
