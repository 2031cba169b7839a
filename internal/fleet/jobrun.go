package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jobPublisher publishes a fleet job's lines to its caller.
type jobPublisher struct {
	m       *Member
	jr      JobRequest
	subject string
	nonce   string // this publisher's: another's lines are never taken for duplicates of its own
	mu      sync.Mutex
	n       int
}

func (m *Member) publisher(jr JobRequest) *jobPublisher {
	// The output goes back to the caller only: only it may read
	// corral.jobout.CALLER.>.
	return &jobPublisher{m: m, jr: jr, subject: subjJobOut + jr.From + "." + m.o.Name + "." + jr.ID, nonce: secret()[:8]}
}

// publish sends a line; event, when not negative, is the job's number for
// an event line.
func (p *jobPublisher) publish(line []byte, event int) {
	m, jr := p.m, p.jr
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	msg := nats.NewMsg(p.subject)
	msg.Data = line
	msg.Header.Set(hdrAttempt, strconv.Itoa(jr.Attempt))
	if event >= 0 {
		msg.Header.Set(hdrEvent, strconv.Itoa(event))
	}
	id := fmt.Sprintf("%s:%d:%s:%d", jr.ID, jr.Attempt, p.nonce, p.n)
	for try := 0; try < 20 && m.ctx.Err() == nil; try++ {
		ctx, cancel := context.WithTimeout(m.ctx, 3*time.Second)
		_, err := m.js.PublishMsg(ctx, msg, jetstream.WithMsgID(id))
		cancel()
		if err == nil {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (p *jobPublisher) control(v map[string]any) {
	v["host"] = p.m.o.Name
	b, _ := json.Marshal(v)
	p.publish(b, -1)
}

// runJob runs a fleet job this host claimed (its claim record at sequence
// claimed on subject) as a local one and streams its lines back. It starts
// it only once its start record is written after the claim: a caller that
// gave the attempt up meanwhile has fenced it off. A job this host runs
// already (its daemon restarted, and the caller queued it again) is tied to
// the message, never run twice.
func (m *Member) runJob(jr JobRequest, subject string, claimed uint64) {
	pub := m.publisher(jr)
	// "taken" for a caller that knows no claim records.
	pub.control(map[string]any{"type": "taken", "attempt": jr.Attempt})
	// The caller hears from the host from its claim on: a start that
	// takes a while (a folder made, a slow disk) is not silence.
	stopAlive := m.sayAlive(pub)
	defer stopAlive()
	if _, err := m.writeClaim(subject, claimRecord{Type: claimStart, Host: m.o.Name, Attempt: jr.Attempt}, claimed, claimTries); err != nil {
		// Refused or not, the record may be there (its own, its answer
		// lost), so the caller may count the attempt as started: it hears
		// it was not, and queues it again at once.
		pub.control(map[string]any{"type": "not_started", "attempt": jr.Attempt})
		if errors.Is(err, errFenced) {
			m.fenced.Add(1)
			m.o.Logf("fleet: job %s from %s (attempt %d) was given up by its caller before it started here; not started", jr.ID, jr.From, jr.Attempt+1)
			return
		}
		// Not started, and silent from now: its caller withdraws it and
		// queues it again, as for a host gone.
		m.o.Logf("fleet: job %s from %s (attempt %d) not started: %v", jr.ID, jr.From, jr.Attempt+1, err)
		return
	}
	for _, p := range m.localJobs() {
		if p.Fleet.ID == jr.ID {
			stopAlive()
			m.reportJob(jr, p.ID)
			return
		}
	}
	w := m.worker
	w.mu.Lock()
	_, cancelled := w.cancelled[jr.ID]
	w.mu.Unlock()
	if cancelled {
		pub.publish(outcomeLine("error", "the job was cancelled before it started", 130), -1)
		return
	}
	req := jr.Exec
	// The job runs in this host's environment: the caller's own is of
	// another machine. Its folder is kept when it exists here.
	req.CallerEnv = nil
	if st, err := os.Stat(req.Cwd); err != nil || !st.IsDir() {
		req.Cwd, _ = os.UserHomeDir()
	}
	req.Fleet = &api.FleetJob{ID: jr.ID, From: jr.From, Attempt: jr.Attempt}
	body, _ := json.Marshal(req)
	m.hook(takeStarting)
	status, resp := m.local("POST", "/v1/jobs", body)
	if status/100 != 2 {
		var e api.Error
		_ = json.Unmarshal(resp, &e)
		pub.publish(outcomeLine("error", fmt.Sprintf("host %s could not start the job: %s", m.o.Name, e.Error), 127), -1)
		return
	}
	var p api.Pane
	_ = json.Unmarshal(resp, &p)
	stopAlive()
	m.streamJob(pub, p.ID, false)
}

// reportJob streams back a job this host runs already for jr (tied to it
// again): from its first event, which the caller drops if it has it.
func (m *Member) reportJob(jr JobRequest, local string) {
	m.streamJob(m.publisher(jr), local, true)
}

// streamJob says the local job runs, and streams its lines back until its
// outcome, with a word every second that the host is alive.
func (m *Member) streamJob(pub *jobPublisher, local string, resumed bool) {
	jr := pub.jr
	w := m.worker
	w.mu.Lock()
	w.running[jr.ID] = local
	// A cancel heard after runJob looked and before this knew no job to kill.
	_, cancelled := w.cancelled[jr.ID]
	w.mu.Unlock()
	if cancelled {
		m.local("POST", "/v1/panes/"+url.PathEscape(local)+"/kill", []byte(`{"signal":"TERM"}`))
	}
	defer func() {
		w.mu.Lock()
		if w.running[jr.ID] == local {
			delete(w.running, jr.ID)
		}
		w.mu.Unlock()
	}()
	started := map[string]any{"type": "started", "job": local}
	if resumed {
		started["resumed"] = true
	}
	pub.control(started)
	defer m.sayAlive(pub)()
	// The job's stream, from this host's own API.
	pr, pw := io.Pipe()
	sctx, scancel := context.WithCancel(m.ctx)
	defer scancel()
	go func() {
		req, _ := http.NewRequestWithContext(sctx, "GET", "http://corral/v1/jobs/"+url.PathEscape(local)+"/stream", nil)
		m.o.Local.Handler().ServeHTTP(&pipeWriter{w: pw, header: http.Header{}}, req)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), MaxMessage-4096)
	sawOutcome := false
	event := 0
	for sc.Scan() {
		line := append([]byte(nil), sc.Bytes()...)
		var probe struct{ Type, Line string }
		_ = json.Unmarshal(line, &probe)
		switch {
		case probe.Type == "outcome":
			sawOutcome = true
			pub.publish(line, -1)
		case probe.Type == "diagnostic" && strings.HasPrefix(probe.Line, api.FellBehind):
			pub.publish(line, -1)
		default:
			pub.publish(line, event)
			event++
		}
	}
	if !sawOutcome && sc.Err() == nil && m.localRunning(local) {
		// The daemon let the job go on for the next one (a hand-over),
		// which reports it again: no outcome is known, none is told.
		pr.Close()
		return
	}
	if !sawOutcome {
		pub.publish(outcomeLine("error", fmt.Sprintf("host %s lost the job's stream: %v", m.o.Name, sc.Err()), 1), -1)
	}
	pr.Close()
}

// sayAlive says that this host is alive, for pub's job, five times in
// a job's silence (every second of JobSilence's 5 s), until stopped (once
// or more).
func (m *Member) sayAlive(pub *jobPublisher) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(jobSilence / 5)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-m.ctx.Done():
				return
			case <-t.C:
				pub.control(map[string]any{"type": "alive"})
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

// localRunning reports whether this host's job id has not ended.
func (m *Member) localRunning(id string) bool {
	status, body := m.local("GET", "/v1/panes/"+url.PathEscape(id), nil)
	var p api.Pane
	return status/100 == 2 && json.Unmarshal(body, &p) == nil && p.ExitCode == nil
}

func outcomeLine(state, reason string, code int) []byte {
	b, _ := json.Marshal(map[string]any{"type": "outcome", "outcome": map[string]any{"state": state, "reason": reason, "exit_code": code, "diagnostics": 0}})
	return b
}

// FleetLineType is the type of the lines the fleet adds to a job's
// stream: which host took it, a host that went silent.
const FleetLineType = "fleet"

func diagnosticLine(text string) []byte {
	b, _ := json.Marshal(map[string]string{"type": FleetLineType, "text": text})
	return b
}

// pipeWriter streams an in-process handler's answer.
type pipeWriter struct {
	w      *io.PipeWriter
	header http.Header
}

func (p *pipeWriter) Header() http.Header { return p.header }

func (p *pipeWriter) WriteHeader(int) {}

func (p *pipeWriter) Write(b []byte) (int, error) { return p.w.Write(b) }

func (p *pipeWriter) Flush() {}
