package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/nats-io/nats.go"
)

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
		emit(outcomeLine("error", fmt.Sprintf("host %s stopped answering mid-job (nothing for %v); the job is lost — its end on that host is unknown", taker, jobSilence), 1))
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
			case taker != "" && time.Since(lastWord) > jobSilence:
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
