package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-dev/corral/internal/api"
)

// Commands: a request on corral.cmd.HOST carries an API request in its
// headers and body; the reply carries the status and the answer's body.
const (
	hdrMethod = "Corral-Method"
	hdrPath   = "Corral-Path"
	hdrStatus = "Corral-Status"
)

// remotePaths are the API requests another host may make: the pane
// commands that answer at once (streams stay local). Compiled on first use:
// ~55 KB of heap that every corral process, each holder's included, would
// otherwise keep from its start.
var remotePaths = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(GET /v1/panes(/[^/?]+(/screen)?)?|POST /v1/panes/[^/?]+/(send|answer|kill)|DELETE /v1/panes/[^/?]+|GET /v1/status)(\?[A-Za-z0-9=&_]*)?$`)
})

// ErrNoHost means no daemon of that name answers in the fleet.
var ErrNoHost = errors.New("no such host answers in the fleet")

// Why a command to another host was not carried out, said at once rather
// than after a timeout.
var (
	ErrHubUnreachable  = errors.New("the fleet's hub is unreachable")
	ErrHostUnreachable = errors.New("the host is unreachable")
	ErrNotPermitted    = errors.New("not permitted")
)

// HubDown says whether this host has lost the hub, and since when.
func (m *Member) HubDown() (bool, time.Time) {
	if since := m.downSince.Load(); since != 0 {
		return true, time.Unix(0, since)
	}
	if !m.nc.IsConnected() {
		return true, time.Now()
	}
	return false, time.Time{}
}

// cmdRefusalWait bounds the wait for the server's word that a command was
// refused (it comes asynchronously, as a permissions violation).
const cmdRefusalWait = 10 * time.Second

// Request sends an API request to a host's daemon and returns its status
// and body.
func (m *Member) Request(ctx context.Context, host, method, path string, body []byte) (int, []byte, error) {
	if err := CheckName(host); err != nil {
		return 0, nil, err
	}
	if !remotePaths().MatchString(method + " " + path) {
		return 0, nil, fmt.Errorf("%s %s cannot be sent to another host; run it there", method, path)
	}
	if down, at := m.HubDown(); down {
		return 0, nil, fmt.Errorf("%w (since %s, %v ago); this host keeps trying to reach it; corral fleet status says more",
			ErrHubUnreachable, at.Format(time.TimeOnly), time.Since(at).Round(time.Second))
	}
	if h, ok := m.view.host(host); ok && !h.seen.IsZero() && time.Since(h.seen) >= Unreachable {
		return 0, nil, fmt.Errorf("%w: %s, last heard from %v ago (at %s); it is down, or cut off from the hub",
			ErrHostUnreachable, host, time.Since(h.seen).Round(time.Second), h.seen.Format(time.TimeOnly))
	}
	msg := nats.NewMsg(subjCmd + host)
	msg.Header.Set(hdrMethod, method)
	msg.Header.Set(hdrPath, path)
	msg.Data = body
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cmdRefusalWait)
		defer cancel()
	}
	refused := m.cmdRefused.Load()
	type answer struct {
		resp *nats.Msg
		err  error
	}
	done := make(chan answer, 1)
	rctx, cancelReq := context.WithCancel(ctx)
	defer cancelReq()
	go func() {
		resp, err := m.nc.RequestMsgWithContext(rctx, msg)
		done <- answer{resp, err}
	}()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var resp *nats.Msg
	var err error
wait:
	for {
		select {
		case a := <-done:
			resp, err = a.resp, a.err
			break wait
		case <-tick.C:
			if m.cmdRefused.Load() > refused {
				return 0, nil, fmt.Errorf("%w: this host may not command %s (its credential is observe-only; corral fleet invite gives one that may)", ErrNotPermitted, host)
			}
		}
	}
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return 0, nil, fmt.Errorf("%w: %s (it left, or its daemon stopped; corral fleet status shows the hosts)", ErrNoHost, host)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return 0, nil, fmt.Errorf("host %s did not answer %s %s in time", host, method, path)
	case err != nil && strings.Contains(err.Error(), "Permissions Violation"):
		return 0, nil, fmt.Errorf("%w: this host may not command %s (its credential is observe-only; corral fleet invite gives one that may)", ErrNotPermitted, host)
	case err != nil:
		return 0, nil, fmt.Errorf("host %s: %w", host, err)
	}
	status, err := strconv.Atoi(resp.Header.Get(hdrStatus))
	if err != nil || status < 100 || status > 599 {
		m.badIn.Add(1)
		return 0, nil, fmt.Errorf("host %s sent a malformed answer", host)
	}
	return status, resp.Data, nil
}

// cmdSlots bounds the commands served at once.
var cmdSlots = make(chan struct{}, 32)

func (m *Member) serveCommand(msg *nats.Msg) {
	method, path := msg.Header.Get(hdrMethod), msg.Header.Get(hdrPath)
	if msg.Reply == "" {
		m.badIn.Add(1)
		return
	}
	if msg.Header.Get(hdrAttachOp) != "" {
		go m.serveAttach(msg, true)
		return
	}
	if !remotePaths().MatchString(method + " " + path) {
		m.badIn.Add(1)
		m.replyCommand(msg, http.StatusBadRequest, apiError("bad_request", fmt.Sprintf("host %s serves no %q %q from other hosts", m.o.Name, method, path)))
		return
	}
	select {
	case cmdSlots <- struct{}{}:
	default:
		m.replyCommand(msg, http.StatusServiceUnavailable, apiError("busy", "host "+m.o.Name+" is serving too many fleet commands; try again"))
		return
	}
	go func() {
		defer func() { <-cmdSlots }()
		ctx, cancel := context.WithTimeout(m.ctx, 9*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, "http://corral"+path, bytes.NewReader(msg.Data))
		if err != nil {
			m.replyCommand(msg, http.StatusBadRequest, apiError("bad_request", err.Error()))
			return
		}
		if len(msg.Data) > 0 {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := &recorder{header: http.Header{}, status: http.StatusOK}
		m.o.Local.Handler().ServeHTTP(rec, req)
		m.replyCommand(msg, rec.status, rec.body.Bytes())
	}()
}

func (m *Member) replyCommand(msg *nats.Msg, status int, body []byte) {
	r := nats.NewMsg(msg.Reply)
	r.Header.Set(hdrStatus, strconv.Itoa(status))
	if len(body) > MaxMessage-4096 {
		status, body = http.StatusInternalServerError, apiError("internal", "the answer is too big for the fleet")
		r.Header.Set(hdrStatus, strconv.Itoa(status))
	}
	r.Data = body
	_ = m.nc.PublishMsg(r)
}

func apiError(code, msg string) []byte {
	b, _ := json.Marshal(api.Error{Error: msg, Code: code})
	return b
}

// recorder is an in-process http.ResponseWriter.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(s int) {
	if !r.wrote {
		r.status, r.wrote = s, true
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	if r.body.Len()+len(b) > MaxMessage {
		return 0, errors.New("answer too big")
	}
	return r.body.Write(b)
}
