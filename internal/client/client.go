// Package client talks to the corral daemon over its unix socket, and
// starts the daemon when it is not running (as tmux does).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/api"
)

// Timeout is how long a client waits for the daemon to answer: all of a
// request's answer, or the start (the headers) of a stream.
const Timeout = 10 * time.Second

// Client is a connection to one daemon.
type Client struct {
	Socket string
	// Timeout bounds every answer (default Timeout).
	Timeout time.Duration
	http    *http.Client
	// otherWait is OtherDaemonWait but in tests.
	otherWait time.Duration
}

// New returns a client for the daemon at socket.
func New(socket string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	return &Client{Socket: socket, Timeout: Timeout, http: &http.Client{Transport: tr}, otherWait: OtherDaemonWait}
}

// ErrNoAnswer means a daemon took the request and did not answer in time.
var ErrNoAnswer = errors.New("the daemon did not answer")

// noAnswer is the error of a request the daemon did not answer in time.
func (c *Client) noAnswer(method, path string) error {
	return fmt.Errorf("%w within %v: %s %s; it may be stuck: corral shutdown ends it and its panes, and its log says more", ErrNoAnswer, c.Timeout, method, path)
}

// Error is an error the daemon answered with.
type Error struct {
	Status int
	Body   api.Error
}

func (e *Error) Error() string { return e.Body.Error }

// Code is the daemon's machine-readable error code ("blocked", …).
func (e *Error) Code() string { return e.Body.Code }

// ErrNoDaemon means nothing answers on the socket.
var ErrNoDaemon = errors.New("no corral daemon is running")

// Do sends a request with in as its JSON body (nil for none) and decodes
// the JSON answer into out (nil to discard).
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	resp, done, err := c.send(ctx, method, path, in)
	if err != nil {
		return err
	}
	defer done()
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
	} else {
		err = json.NewDecoder(resp.Body).Decode(out)
	}
	if err != nil {
		if errors.Is(context.Cause(resp.Request.Context()), ErrNoAnswer) {
			return c.noAnswer(method, path)
		}
		return fmt.Errorf("reading the daemon's answer to %s %s: %w", method, path, err)
	}
	return nil
}

// Raw sends a request without a body and returns the answer's bytes as
// they came, unchecked: for a caller that passes JSON on, a decode would
// only scan it once more.
func (c *Client) Raw(ctx context.Context, method, path string) ([]byte, error) {
	resp, done, err := c.send(ctx, method, path, nil)
	if err != nil {
		return nil, err
	}
	defer done()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		if errors.Is(context.Cause(resp.Request.Context()), ErrNoAnswer) {
			return nil, c.noAnswer(method, path)
		}
		return nil, fmt.Errorf("reading the daemon's answer to %s %s: %w", method, path, err)
	}
	return b, nil
}

// Stream sends a GET and returns the body for the caller to read. The
// daemon must start answering within the client's Timeout; the body then
// takes as long as it takes.
func (c *Client) Stream(ctx context.Context, path string) (io.ReadCloser, error) {
	resp, done, err := c.send(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	done()
	return resp.Body, nil
}

// send makes a request whose answer must come within c.Timeout; done stops
// that clock (call it once the answer is read, or to let a stream run).
func (c *Client) send(ctx context.Context, method, path string, in any) (resp *http.Response, done func(), err error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = Timeout
	}
	rctx, cancel := context.WithCancelCause(ctx)
	clock := time.AfterFunc(timeout, func() { cancel(ErrNoAnswer) })
	defer func() {
		if err != nil {
			clock.Stop()
			cancel(nil)
		}
	}()
	resp, err = c.exchange(rctx, method, path, in)
	if err != nil && errors.Is(context.Cause(rctx), ErrNoAnswer) {
		err = c.noAnswer(method, path)
	}
	if err != nil {
		return nil, nil, err
	}
	// The stream's body keeps rctx until it is closed.
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: func() { cancel(nil) }}
	return resp, func() { clock.Stop() }, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel func()
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

func (c *Client) exchange(ctx context.Context, method, path string, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://corral"+FleetPath(path), body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w at %s (%v)", ErrNoDaemon, c.Socket, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		e := &Error{Status: resp.StatusCode}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&e.Body); err != nil || e.Body.Error == "" {
			e.Body = api.Error{Error: fmt.Sprintf("the daemon answered %s", resp.Status), Code: "internal"}
		}
		return nil, e
	}
	return resp, nil
}

// FleetPath routes a pane named HOST:ID (or HOST:NAME) through the
// daemon's fleet: /v1/panes/HOST:ID/… becomes
// /v1/fleet/hosts/HOST/v1/panes/ID/…; other paths stay as they are.
func FleetPath(path string) string {
	rest, ok := strings.CutPrefix(path, "/v1/panes/")
	if !ok {
		return path
	}
	rest, query, hasQuery := strings.Cut(rest, "?")
	ref, tail, hasTail := strings.Cut(rest, "/")
	host, id, ok := strings.Cut(ref, ":")
	if !ok || host == "" || id == "" {
		return path
	}
	out := "/v1/fleet/hosts/" + host + "/v1/panes/" + id
	if hasTail {
		out += "/" + tail
	}
	if hasQuery {
		out += "?" + query
	}
	return out
}

// HTTPClient is the client's HTTP client, dialling the daemon's socket
// (for WebSocket dials).
func (c *Client) HTTPClient() *http.Client { return c.http }

// Ping reports whether a daemon answers. It asks for the daemon's status,
// which no pane can hold up.
func (c *Client) Ping(ctx context.Context) error {
	return c.Do(ctx, http.MethodGet, "/v1/status", nil, nil)
}

// OtherDaemonWait bounds how long EnsureDaemon waits for a daemon another
// client started at the same moment, once its own has gone.
const OtherDaemonWait = 3 * time.Second

// EnsureDaemon starts `exe serve` in the background when no daemon
// answers, and waits until it does. The daemon's output goes to logFile.
// A daemon that takes requests but does not answer them is an error (with
// where its log is), not a reason to start another.
func (c *Client) EnsureDaemon(ctx context.Context, exe, logFile string) error {
	err := c.Ping(ctx)
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrNoAnswer) {
		return fmt.Errorf("%w (log: %s)", err, logFile)
	}
	if err := os.MkdirAll(filepath.Dir(logFile), 0o700); err != nil {
		return fmt.Errorf("start the daemon: %w", err)
	}
	out, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("start the daemon: %w", err)
	}
	defer out.Close()
	cmd := exec.Command(exe, "serve")
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "CORRAL_SOCKET="+c.Socket)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the daemon: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c.Ping(ctx) == nil {
			return nil
		}
		select {
		case err := <-exited:
			// Another client may have started one at the same moment: ours
			// found the lock taken and went, and the other answers once it
			// has started (re-adopting panes takes a moment).
			for wait := time.Now().Add(c.otherWait); time.Now().Before(wait); {
				if c.Ping(ctx) == nil {
					return nil
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(20 * time.Millisecond):
				}
			}
			return fmt.Errorf("the daemon exited at start (%v); see %s", err, logFile)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("the daemon did not answer within 10s; see %s", logFile)
}
