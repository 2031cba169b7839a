package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/fleet"
)

// Proxy is what the routes that reach other hosts need of the daemon.
type Proxy interface {
	// LocalPath says whether a request for host's API path rest is this
	// daemon's own (its own host, or a local pane whose name holds a
	// colon, such as a tmux pane's SESSION:WINDOW.PANE), and the local
	// path to serve it at.
	LocalPath(host, rest string) (string, bool)
	// FleetRequest sends an API request to another host and returns its
	// answer.
	FleetRequest(ctx context.Context, host, method, path string, body []byte) (status int, answer []byte, err error)
	// FleetAttach joins a terminal to another host's pane.
	FleetAttach(ctx context.Context, host, ref string) (Session, error)
	// FleetEvents follows the fleet's events (host's only, when given;
	// from since, when given): ready is called once they are followed,
	// then each is given every event until it returns an error or ctx
	// ends. An *Error before ready is the request's answer; any other
	// error ends the stream with a line that says it.
	FleetEvents(ctx context.Context, host string, since time.Time, ready func(), each func(fleet.Event) error) error
}

var attachPath = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^/v1/panes/([^/?]+)/attach$`) })

// proxy sends an API request to a host: this one's own API, or another's
// through the fleet, and answers with its answer.
func (h *handlers) proxy(w http.ResponseWriter, r *http.Request) {
	host, rest := r.PathValue("host"), "/"+r.PathValue("rest")
	if r.URL.RawQuery != "" {
		rest += "?" + r.URL.RawQuery
	}
	if local, ok := h.svc.LocalPath(host, rest); ok {
		req := r.Clone(r.Context())
		u, _ := url.Parse(local)
		req.URL, req.RequestURI = u, local
		h.mux.ServeHTTP(w, req)
		return
	}
	if sm := attachPath().FindStringSubmatch(rest); sm != nil {
		ref, err := url.PathUnescape(sm[1])
		if err != nil {
			Fail(w, http.StatusBadRequest, "bad_request", err)
			return
		}
		sess, err := h.svc.FleetAttach(r.Context(), host, ref)
		if err != nil {
			WriteError(w, err)
			return
		}
		serveSession(w, r, sess)
		return
	}
	var body bytes.Buffer
	if _, err := body.ReadFrom(http.MaxBytesReader(w, r.Body, MaxBody)); err != nil {
		Fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("request body: %v", err))
		return
	}
	status, answer, err := h.svc.FleetRequest(r.Context(), host, r.Method, rest, body.Bytes())
	if err != nil {
		WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

// fleetEvents streams the fleet's events as NDJSON, each with its host:
// ?host=H only that host's, ?pane=P only that pane's (id or name),
// ?since=RFC3339 from then, else new ones; ?follow=1 keeps going (else it
// stops once idle for a moment).
func (h *handlers) fleetEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	host := q.Get("host")
	if host != "" {
		if err := fleet.CheckName(host); err != nil {
			Fail(w, http.StatusBadRequest, "bad_request", err)
			return
		}
	}
	var since time.Time
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			Fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("since %q is not RFC 3339", v))
			return
		}
		since = t
	}
	pane := q.Get("pane")
	follow := q.Get("follow") == "1"
	rc := http.NewResponseController(w)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	enc := json.NewEncoder(w)
	started := false
	// Without ?follow the stream ends once idle for a second after it
	// is followed (however long following took: a fleet whose hub just
	// went takes seconds).
	var idle *time.Timer
	defer func() {
		if idle != nil {
			idle.Stop()
		}
	}()
	// The answer starts once the stream is followed: a caller that reads
	// a state next misses no change in between.
	w.Header().Set("Content-Type", "application/x-ndjson")
	ready := func() {
		started = true
		_ = rc.Flush()
		if !follow {
			idle = time.AfterFunc(time.Second, cancel)
		}
	}
	err := h.svc.FleetEvents(ctx, host, since, ready, func(ev fleet.Event) error {
		if idle != nil {
			idle.Reset(time.Second)
		}
		if pane != "" && ev.Pane != pane && ev.Name != pane {
			return nil
		}
		_ = rc.SetWriteDeadline(time.Now().Add(StreamWriteWait))
		if err := enc.Encode(ev); err != nil {
			return err
		}
		return rc.Flush()
	})
	// The daemon's refusal (no fleet, its hub down) is the request's
	// answer; a stream that could not be followed, or broke, ends with
	// a line saying why (the caller may follow again).
	var refused *Error
	switch {
	case err == nil:
	case !started && errors.As(err, &refused):
		WriteError(w, err)
	case ctx.Err() == nil:
		_ = enc.Encode(api.StreamEnd{End: err.Error()})
	}
}
