package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-dev/corral/internal/api"
)

// JobSilence is how long a host running a job may say nothing (it says
// "alive" every second) before the job is taken for lost.
const JobSilence = 5 * time.Second

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

// SubmitJob puts a job on the queue (for host, or any host with capacity)
// and calls emit with its lines, as a local job's stream has them, until
// its outcome line. A host that goes silent mid-job ends it in error, or,
// with retry > 0, queues it again. Cancelling ctx cancels the job.
func (m *Member) SubmitJob(ctx context.Context, id string, req api.ExecRequest, host string, retry int, emit func([]byte)) error {
	subject := subjJobAny
	if host != "" {
		if err := CheckName(host); err != nil {
			return err
		}
		subject = subjJobFor + host
	}
	if id == "" {
		id = NewJobID()
	}
	// The output comes pushed to this host's own inbox (an ordered push
	// consumer): no other host can pull it.
	legacy, err := m.nc.JetStream()
	if err != nil {
		return fmt.Errorf("follow the job's output: %w", err)
	}
	msgs := make(chan *nats.Msg, 256)
	done := make(chan struct{})
	defer close(done)
	sub, err := legacy.Subscribe(subjJobOut+m.o.Name+".*."+id, func(msg *nats.Msg) {
		select {
		case msgs <- msg:
		case <-done:
		}
	}, nats.OrderedConsumer(), nats.BindStream(OutputStream), nats.DeliverAll())
	if err != nil {
		return fmt.Errorf("follow the job's output: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	// attempt numbers the messages queued for this job; retried counts
	// those queued again after a start (--retry), unstarted those queued
	// again because their host claimed them and never started them.
	attempt, retried, unstarted := 0, 0, 0
	// fence is the sequence of the job's last claim record seen or written
	// (see claimRecord); claimed says taker wrote a claim (a host that
	// writes none, of an older corral, is never fenced), started that it
	// wrote its start.
	var fence uint64
	claims := claimSubject(m.o.Name, id)
	claimed, started := false, false
	// notStarted: the taker said it did not start the attempt.
	notStarted := false
	// cancelled ends the job for a caller that gave up: a host that took
	// it hears the cancel, and an attempt not yet started never starts (a
	// host that had not heard the cancel, or takes the message later,
	// finds it fenced).
	cancelled := func() error {
		_ = m.nc.Publish(subjJobCtl+id, []byte("cancel"))
		_ = m.nc.Flush()
		if !started {
			_, _ = m.writeClaim(claims, claimRecord{Type: claimWithdraw, Attempt: attempt}, fence, 1)
		}
		return ctx.Err()
	}
	enqueue := func() error {
		b, _ := json.Marshal(JobRequest{ID: id, Attempt: attempt, From: m.o.Name, Exec: req, Fence: fence})
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := m.js.Publish(pctx, subject, b)
		if err == nil && m.o.queueAnswerLost != nil && m.o.queueAnswerLost() {
			err = context.DeadlineExceeded
		}
		if err != nil && ctx.Err() != nil {
			// The caller gave up while the server's ack was on its way:
			// the job may be stored, and taken already.
			return cancelled()
		}
		if err != nil {
			// The message may be stored though its answer did not come (a
			// timeout while the server wrote it): withdrawn, a host that
			// takes it finds it fenced rather than runs a job whose
			// caller has gone.
			_, _ = m.writeClaim(claims, claimRecord{Type: claimWithdraw, Attempt: attempt}, fence, 1)
			return fmt.Errorf("queue the job: %w", err)
		}
		return nil
	}
	seq, err := m.writeClaim(claims, claimRecord{Type: claimQueue}, 0, claimTries)
	if err != nil {
		return fmt.Errorf("queue the job: %w", err)
	}
	fence = seq
	if err := enqueue(); err != nil {
		return err
	}
	taker, lastWord, queued := "", time.Now(), time.Now()
	next := func() error {
		attempt++
		taker, claimed, started, notStarted, queued = "", false, false, false, time.Now()
		return enqueue()
	}
	// gaveUp goes on from an attempt given up (its taker silent): queued
	// again, or the job's outcome (done true).
	gaveUp := func() (done bool, err error) {
		if claimed && (!started || notStarted) {
			// Fenced before its start: it did not run, and runs elsewhere.
			if unstarted < jobUnstartedRequeues {
				unstarted++
				why := "stopped answering before starting it"
				if notStarted {
					why = "could not record its start"
				}
				emit(diagnosticLine(fmt.Sprintf("host %s took the job and %s (it did not run there); queued again", taker, why)))
				return false, next()
			}
			emit(outcomeLine("error", fmt.Sprintf("the job did not start: %d hosts took it and stopped answering before starting it, the last %s", unstarted+1, taker), 1))
			return true, nil
		}
		if retried < retry {
			retried++
			emit(diagnosticLine(fmt.Sprintf("host %s stopped answering mid-job; queued again (attempt %d of %d)", taker, retried+1, retry+1)))
			return false, next()
		}
		emit(outcomeLine("error", fmt.Sprintf("host %s stopped answering mid-job (nothing for %v); the job is lost — its end on that host is unknown", taker, JobSilence), 1))
		return true, nil
	}
	// nextEvent: the job's events up to it were emitted. A host that
	// reports its job again (its daemon restarted; the job went on under
	// its holder) sends them from the first: those are dropped.
	nextEvent := 0
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return cancelled()
		case msg, ok := <-msgs:
			if !ok {
				return errors.New("the job's output stream ended")
			}
			from := strings.TrimSuffix(strings.TrimPrefix(msg.Subject, subjJobOut+m.o.Name+"."), "."+id)
			if from == claimToken {
				if meta, err := msg.Metadata(); err == nil {
					fence = max(fence, meta.Sequence.Stream)
				}
				var rec claimRecord
				if json.Unmarshal(msg.Data, &rec) != nil || rec.Attempt != attempt {
					continue
				}
				switch {
				case rec.Type == claimClaim && taker == "":
					taker, claimed, lastWord = rec.Host, true, time.Now()
				case rec.Type == claimStart && rec.Host == taker:
					started, lastWord = true, time.Now()
				case rec.Type == claimWithdraw && taker != "":
					// This side's own, whose answer was lost.
					if done, err := gaveUp(); done || err != nil {
						return err
					}
				}
				continue
			}
			if a, _ := strconv.Atoi(msg.Header.Get(hdrAttempt)); a != attempt {
				continue
			}
			var probe struct {
				Type    string `json:"type"`
				Job     string `json:"job"`
				Resumed bool   `json:"resumed"`
				Last    uint64 `json:"last"`
			}
			_ = json.Unmarshal(msg.Data, &probe)
			if probe.Type == "fence_gone" && taker == "" && probe.Last < fence {
				// The records this attempt is fenced by are gone: no host
				// can claim it. Fenced again after what is left, it is
				// queued again; refused, a record came first and is heard.
				seq, err := m.writeClaim(claims, claimRecord{Type: claimWithdraw, Attempt: attempt}, probe.Last, claimTries)
				if err == nil {
					fence = seq
					emit(diagnosticLine(fmt.Sprintf("host %s found the job's claim records gone (they are kept %v); queued again", from, outputMaxAge)))
					if err := next(); err != nil {
						return err
					}
				}
				continue
			}
			if taker == "" && probe.Type == "taken" {
				taker, lastWord = from, time.Now() // a host that writes no claim
				continue
			}
			if from != taker {
				continue
			}
			if !notStarted { // an alive sent before it said so
				lastWord = time.Now()
			}
			switch probe.Type {
			case "alive", "taken":
				continue
			case "not_started":
				// Given up at the next tick, without waiting for silence.
				notStarted, lastWord = true, time.Time{}
				continue
			case "started":
				text := fmt.Sprintf("host %s runs the job as %s:%s (answer its permission requests with corral answer %s:%s yes|no)", taker, taker, probe.Job, taker, probe.Job)
				if probe.Resumed {
					text = fmt.Sprintf("host %s runs the job as %s:%s still (its daemon restarted; the job went on, and runs once)", taker, taker, probe.Job)
				} else {
					nextEvent = 0 // a run of its own, from its start
				}
				b, _ := json.Marshal(map[string]string{"type": FleetLineType, "runs_on": taker, "job": probe.Job, "text": text})
				emit(b)
				continue
			}
			if h := msg.Header.Get(hdrEvent); h != "" {
				n, err := strconv.Atoi(h)
				if err == nil && n < nextEvent {
					continue // had already
				}
				nextEvent = n + 1
			}
			emit(msg.Data)
			if probe.Type == "outcome" {
				return nil
			}
		case <-tick.C:
			if !m.nc.IsConnected() {
				lastWord = time.Now() // this side is away: the host's silence says nothing
				continue
			}
			switch {
			case taker == "" && time.Since(queued) > 30*time.Second:
				emit(diagnosticLine("the job waits for a host with capacity (corral fleet status shows each host's max_jobs)"))
				queued = time.Now()
			case taker != "" && time.Since(lastWord) > JobSilence:
				// The attempt is given up only once the withdrawal is
				// written after the last record seen: a host that claimed
				// or started it meanwhile has its record first, and is
				// heard.
				seq, err := m.writeClaim(claims, claimRecord{Type: claimWithdraw, Attempt: attempt}, fence, claimTries)
				if errors.Is(err, errFenced) && seq < fence {
					// The records up to the one seen are gone (a job longer
					// than they are kept): after what is left.
					seq, err = m.writeClaim(claims, claimRecord{Type: claimWithdraw, Attempt: attempt}, seq, claimTries)
				}
				switch {
				case errors.Is(err, errFenced):
					// A record not seen yet came first: heard when it comes
					// (the taker's start, which it did not follow, is given
					// up at the next tick).
					if !notStarted {
						lastWord = time.Now()
					}
					continue
				case err != nil && retried < retry:
					// Queued again fenced by the last record seen, the job
					// could never be claimed once the host goes on after
					// it (its start): wait on, and withdraw at the next
					// silence.
					emit(diagnosticLine(fmt.Sprintf("host %s is silent and its attempt could not be given up (%v); waiting for it", taker, err)))
					lastWord = time.Now()
					continue
				case err != nil:
					// Not fenced (the fleet did not take the record): the
					// host may still start it; no try is left, and the job
					// ends as lost.
					claimed = false
				default:
					fence = max(fence, seq)
				}
				if done, err := gaveUp(); done || err != nil {
					return err
				}
			}
		}
	}
}

// jobUnstartedRequeues bounds how many times a job is queued again after
// hosts claimed it and went silent before starting it.
const jobUnstartedRequeues = 3

// NewJobID returns a fleet job's id.
func NewJobID() string { return "fj" + secret()[:16] }

// CancelJob asks whichever host runs a fleet job to end it.
func (m *Member) CancelJob(id string) error {
	return m.nc.Publish(subjJobCtl+id, []byte("cancel"))
}
