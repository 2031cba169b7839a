package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Attaching to another host's pane goes through request and reply, as
// the permissions allow a host to answer each request once: the caller
// keeps one read outstanding (a long poll the host answers as soon as
// the pane prints), and sends each key as a request of its own. A
// keystroke's echo costs about one round trip: the key's way there, the
// echo's way back on the read already waiting.
//
// Reads (open, read, close) go on corral.view.HOST, which every member
// may use: an observe-only host attaches read-only. Keys and resizes go
// on corral.cmd.HOST, which takes control.

// AttachSession is a pane's terminal as the local daemon gives it.
type AttachSession interface {
	// Initial is the redraw of the screen as it is.
	Initial() []byte
	// Output carries what the program prints; it closes when the pane
	// ends the session.
	Output() <-chan []byte
	Reason() string
	Input(b []byte) error
	Resize(cols, rows int) error
	Close()
}

// Attacher is a Local that can join a terminal to one of its panes.
type Attacher interface {
	Attach(ref string) (AttachSession, error)
}

const (
	subjView      = "corral.view." // + HOST: attach reads
	hdrAttachOp   = "Corral-Attach"
	hdrAttachID   = "Corral-Attach-Session"
	hdrAttachEnd  = "Corral-Attach-End"
	hdrAttachPane = "Corral-Attach-Pane"
	// attachPoll is how long a read waits for output before answering
	// empty; attachIdle is how long a session without reads is kept.
	attachPoll  = 2 * time.Second
	attachIdle  = 30 * time.Second
	attachChunk = 256 << 10
)

// attachHost is the sessions a host serves.
type attachHost struct {
	mu       sync.Mutex
	sessions map[string]*servedSession
}

type servedSession struct {
	s        AttachSession
	lastRead time.Time
	reading  sync.Mutex // one read at a time
}

func (m *Member) serveView(msg *nats.Msg) {
	if msg.Reply == "" {
		m.badIn.Add(1)
		return
	}
	go m.serveAttach(msg, false)
}

// serveAttach answers an attach request; control says it came on the
// command subject (keys may come only there).
func (m *Member) serveAttach(msg *nats.Msg, control bool) {
	reply := func(data []byte, end string) {
		r := nats.NewMsg(msg.Reply)
		r.Header.Set(hdrStatus, "200")
		if end != "" {
			r.Header.Set(hdrAttachEnd, end)
		}
		r.Data = data
		_ = m.nc.PublishMsg(r)
	}
	refuse := func(status int, err error) {
		r := nats.NewMsg(msg.Reply)
		r.Header.Set(hdrStatus, strconv.Itoa(status))
		r.Data = apiError("bad_request", err.Error())
		_ = m.nc.PublishMsg(r)
	}
	att, ok := m.o.Local.(Attacher)
	if !ok {
		refuse(400, fmt.Errorf("host %s attaches no terminals", m.o.Name))
		return
	}
	h := &m.attach
	op, id := msg.Header.Get(hdrAttachOp), msg.Header.Get(hdrAttachID)
	if op == "open" {
		s, err := att.Attach(msg.Header.Get(hdrAttachPane))
		if err != nil {
			refuse(404, err)
			return
		}
		id = secret()[:16]
		h.mu.Lock()
		if h.sessions == nil {
			h.sessions = map[string]*servedSession{}
			m.goLoop(m.reapAttach)
		}
		h.sessions[id] = &servedSession{s: s, lastRead: time.Now()}
		h.mu.Unlock()
		r := nats.NewMsg(msg.Reply)
		r.Header.Set(hdrStatus, "200")
		r.Header.Set(hdrAttachID, id)
		r.Data = s.Initial()
		_ = m.nc.PublishMsg(r)
		return
	}
	h.mu.Lock()
	ss := h.sessions[id]
	if ss != nil {
		ss.lastRead = time.Now()
	}
	h.mu.Unlock()
	if ss == nil {
		reply(nil, "the session is over")
		return
	}
	switch {
	case op == "read":
		ss.reading.Lock()
		defer ss.reading.Unlock()
		var out []byte
		t := time.NewTimer(attachPoll)
		defer t.Stop()
		select {
		case b, ok := <-ss.s.Output():
			if !ok {
				m.dropAttach(id)
				reply(nil, ss.s.Reason())
				return
			}
			out = append(out, b...)
		case <-t.C:
		case <-m.ctx.Done():
			return
		}
		// What else is there already goes along.
		for len(out) < attachChunk {
			select {
			case b, ok := <-ss.s.Output():
				if !ok {
					m.dropAttach(id)
					reply(out, ss.s.Reason())
					return
				}
				out = append(out, b...)
				continue
			default:
			}
			break
		}
		reply(out, "")
	case op == "close":
		m.dropAttach(id)
		reply(nil, "detached")
	case op == "input" && control:
		if err := ss.s.Input(msg.Data); err != nil {
			refuse(409, err)
			return
		}
		reply(nil, "")
	case op == "resize" && control:
		var size struct{ Cols, Rows int }
		if json.Unmarshal(msg.Data, &size) == nil && size.Cols > 0 && size.Rows > 0 {
			_ = ss.s.Resize(size.Cols, size.Rows)
		}
		reply(nil, "")
	default:
		m.badIn.Add(1)
		refuse(400, fmt.Errorf("no attach operation %q here", op))
	}
}

func (m *Member) dropAttach(id string) {
	m.attach.mu.Lock()
	ss := m.attach.sessions[id]
	delete(m.attach.sessions, id)
	m.attach.mu.Unlock()
	if ss != nil {
		ss.s.Close()
	}
}

// reapAttach closes the sessions no caller reads any more.
func (m *Member) reapAttach() {
	t := time.NewTicker(attachIdle / 3)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			m.attach.mu.Lock()
			for id, ss := range m.attach.sessions {
				ss.s.Close()
				delete(m.attach.sessions, id)
			}
			m.attach.mu.Unlock()
			return
		case <-t.C:
		}
		var idle []string
		m.attach.mu.Lock()
		for id, ss := range m.attach.sessions {
			if time.Since(ss.lastRead) > attachIdle {
				idle = append(idle, id)
			}
		}
		m.attach.mu.Unlock()
		for _, id := range idle {
			m.dropAttach(id)
		}
	}
}

// RemoteAttach is a terminal joined to another host's pane.
type RemoteAttach struct {
	m          *Member
	host, id   string
	Initial    []byte
	out        chan []byte
	ended      chan struct{}
	endOnce    sync.Once
	reason     string
	cancel     context.CancelFunc
	readOnly   bool
	readOnlyMu sync.Mutex
}

// ErrReadOnly means this host may watch another's pane but not type in
// it (its credential is observe-only).
var ErrReadOnly = errors.New("read-only: this host's credential is observe-only; corral fleet invite gives one that may type")

// Attach joins a terminal to a pane of another host.
func (m *Member) Attach(ctx context.Context, host, ref string) (*RemoteAttach, error) {
	if err := CheckName(host); err != nil {
		return nil, err
	}
	if down, at := m.HubDown(); down {
		return nil, fmt.Errorf("%w (since %s)", ErrHubUnreachable, at.Format(time.TimeOnly))
	}
	resp, err := m.attachRequest(ctx, subjView, host, "open", "", ref, nil, 10*time.Second)
	if err != nil {
		return nil, err
	}
	a := &RemoteAttach{m: m, host: host, id: resp.Header.Get(hdrAttachID), Initial: resp.Data, out: make(chan []byte, 64), ended: make(chan struct{})}
	rctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	go a.readLoop(rctx)
	return a, nil
}

func (m *Member) attachRequest(ctx context.Context, subj, host, op, id, ref string, data []byte, wait time.Duration) (*nats.Msg, error) {
	msg := nats.NewMsg(subj + host)
	msg.Header.Set(hdrAttachOp, op)
	if id != "" {
		msg.Header.Set(hdrAttachID, id)
	}
	if ref != "" {
		msg.Header.Set(hdrAttachPane, ref)
	}
	msg.Data = data
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	resp, err := m.nc.RequestMsgWithContext(ctx, msg)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("%w: %s (it left, or its daemon stopped; corral fleet status shows the hosts)", ErrNoHost, host)
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("host %s did not answer in time", host)
	case err != nil:
		return nil, fmt.Errorf("host %s: %w", host, err)
	}
	if st := resp.Header.Get(hdrStatus); st != "200" {
		var e struct{ Error string }
		_ = json.Unmarshal(resp.Data, &e)
		return nil, fmt.Errorf("host %s: %s", host, e.Error)
	}
	return resp, nil
}

func (a *RemoteAttach) end(reason string) {
	a.endOnce.Do(func() {
		a.reason = reason
		close(a.ended)
	})
}

// readLoop keeps one read outstanding until the session ends.
func (a *RemoteAttach) readLoop(ctx context.Context) {
	defer close(a.out)
	for ctx.Err() == nil {
		resp, err := a.m.attachRequest(ctx, subjView, a.host, "read", a.id, "", nil, attachPoll+5*time.Second)
		if err != nil {
			if ctx.Err() == nil {
				a.end(err.Error())
			}
			return
		}
		if len(resp.Data) > 0 {
			select {
			case a.out <- resp.Data:
			case <-ctx.Done():
				return
			}
		}
		if end := resp.Header.Get(hdrAttachEnd); end != "" {
			a.end(end)
			return
		}
	}
}

// Output carries what the pane prints; it closes when the session ends.
func (a *RemoteAttach) Output() <-chan []byte { return a.out }

// Ended is closed when the session ends; Reason says why.
func (a *RemoteAttach) Ended() <-chan struct{} { return a.ended }

// Reason says why the session ended.
func (a *RemoteAttach) Reason() string {
	select {
	case <-a.ended:
		return a.reason
	default:
		return ""
	}
}

// Input types keys into the pane; ErrReadOnly for an observe-only host.
func (a *RemoteAttach) Input(ctx context.Context, b []byte) error {
	a.readOnlyMu.Lock()
	ro := a.readOnly
	a.readOnlyMu.Unlock()
	if ro {
		return ErrReadOnly
	}
	// The server's refusal comes apart from the request (a permissions
	// violation): watched for, rather than waited out.
	before := a.m.cmdRefused.Load()
	done := make(chan error, 1)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, err := a.m.attachRequest(rctx, subjCmd, a.host, "input", a.id, "", b, 5*time.Second)
		done <- err
	}()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if a.m.cmdRefused.Load() > before {
				a.readOnlyMu.Lock()
				a.readOnly = true
				a.readOnlyMu.Unlock()
				return ErrReadOnly
			}
		}
	}
}

// Resize tells the pane the terminal's size (ignored when read-only).
func (a *RemoteAttach) Resize(ctx context.Context, cols, rows int) {
	a.readOnlyMu.Lock()
	ro := a.readOnly
	a.readOnlyMu.Unlock()
	if ro {
		return
	}
	b, _ := json.Marshal(map[string]int{"cols": cols, "rows": rows})
	_, _ = a.m.attachRequest(ctx, subjCmd, a.host, "resize", a.id, "", b, 5*time.Second)
}

// Close detaches.
func (a *RemoteAttach) Close() {
	a.cancel()
	_, _ = a.m.attachRequest(context.Background(), subjView, a.host, "close", a.id, "", nil, 2*time.Second)
	a.end("detached")
}
