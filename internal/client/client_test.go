package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// A daemon that takes a request and never answers is reported within the
// client's timeout, for a request, a stream's start, and the check that
// would otherwise start a second daemon; one that answers a stream's start
// may then take its time.
func TestDaemonThatDoesNotAnswer(t *testing.T) {
	t.Parallel() // each waits out a timeout of its own
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	defer close(hold)
	mux := http.NewServeMux()
	mux.HandleFunc("/stuck", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/slow-body", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		time.Sleep(600 * time.Millisecond) // the slow body under test
		w.Write([]byte("late\n"))
	})
	mux.HandleFunc("/v1/status", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()

	c := New(sock)
	c.Timeout = 300 * time.Millisecond
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"request", func() error { return c.Do(context.Background(), "POST", "/stuck", map[string]string{}, nil) }},
		{"stream", func() error { _, err := c.Stream(context.Background(), "/stuck"); return err }},
		{"raw", func() error { _, err := c.Raw(context.Background(), "GET", "/stuck"); return err }},
		{"ensure", func() error {
			return c.EnsureDaemon(context.Background(), "/nonexistent/corral", filepath.Join(dir, "log"))
		}},
	} {
		start := time.Now()
		err := tc.call()
		took := time.Since(start)
		if !errors.Is(err, ErrNoAnswer) || !strings.Contains(err.Error(), "the daemon did not answer within 300ms") || took > 2*time.Second {
			t.Errorf("%s: %v after %v", tc.name, err, took)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "log")); err == nil {
		t.Error("EnsureDaemon tried to start a second daemon")
	}
	body, err := c.Stream(context.Background(), "/slow-body")
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	b := make([]byte, 16)
	n, err := body.Read(b)
	if string(b[:n]) != "late\n" {
		t.Fatalf("a stream past the client's timeout: %q %v", b[:n], err)
	}
}

// Raw gives the answer's bytes as they came, and the daemon's error as
// Do does.
func TestRaw(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	big := "[" + strings.Repeat(`{"id":"p1"},`, 50000) + `{"id":"p2"}]` + "\n"
	mux := http.NewServeMux()
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(big)) })
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"no pane p3","code":"not_found"}`))
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	c := New(sock)
	got, err := c.Raw(context.Background(), "GET", "/big")
	if err != nil || string(got) != big {
		t.Fatalf("Raw: %d bytes, %v; want %d bytes", len(got), err, len(big))
	}
	var ce *Error
	if _, err := c.Raw(context.Background(), "GET", "/gone"); !errors.As(err, &ce) || ce.Code() != "not_found" || ce.Error() != "no pane p3" {
		t.Fatalf("Raw of an error: %v", err)
	}
}

func TestFleetPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/v1/panes/k3f9q/screen", "/v1/panes/k3f9q/screen"},
		{"/v1/panes/laptop:k3f9q/screen?ansi=1", "/v1/fleet/hosts/laptop/v1/panes/k3f9q/screen?ansi=1"},
		{"/v1/panes/vm-2:api", "/v1/fleet/hosts/vm-2/v1/panes/api"},
		{"/v1/panes/vm-2:api?force=1", "/v1/fleet/hosts/vm-2/v1/panes/api?force=1"},
		{"/v1/panes/:x", "/v1/panes/:x"},
		{"/v1/events?follow=1", "/v1/events?follow=1"},
	} {
		if got := FleetPath(tc.in); got != tc.want {
			t.Errorf("FleetPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Two clients start a daemon at the same moment: the one whose daemon
// finds the lock taken and exits waits for the other's to answer rather
// than fail.
func TestEnsureDaemonWaitsForAnotherStart(t *testing.T) {
	t.Parallel() // each waits out a timeout of its own
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	exe := filepath.Join(dir, "lost-the-lock")
	if err := proctest.WriteExecutable(exe, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(500 * time.Millisecond) // the other daemon is still starting when ours goes
		ln, err := net.Listen("unix", sock)
		if err != nil {
			return
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/v1/status", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) })
		srv := &http.Server{Handler: mux}
		t.Cleanup(func() { srv.Close() })
		srv.Serve(ln)
	}()
	c := New(sock)
	if err := c.EnsureDaemon(context.Background(), exe, filepath.Join(dir, "log")); err != nil {
		t.Fatalf("with another daemon starting: %v", err)
	}
	// Nobody else starting: the failure is reported, after the wait.
	start := time.Now()
	other := New(filepath.Join(dir, "none.sock"))
	other.otherWait = 500 * time.Millisecond // the wait's length is not under test
	err := other.EnsureDaemon(context.Background(), exe, filepath.Join(dir, "log"))
	if err == nil || !strings.Contains(err.Error(), "exited at start") || time.Since(start) > other.otherWait+2*time.Second {
		t.Fatalf("a daemon that cannot start: %v after %v", err, time.Since(start))
	}
}
