// Package board is the web board: a page that shows every pane live, lets
// a person answer, type into and kill panes, and is safe to leave open.
//
// Signing in: corral board gets a one-time sign-in address from the
// daemon (a code good for one use within CodeTTL) and hands it to the
// browser through a file only the user can read, never on a command line.
// The code is traded for a session cookie whose name is the board's own,
// whose value only this board knows, and whose Path is the board's secret
// prefix /b/ID/, so a browser never sends it to another server on the same
// host (cookies are not separated by port, paths are). Every request needs
// a session or a code; a Host header that is not one of the board's own
// addresses is refused (DNS rebinding); the WebSocket and the actions
// refuse other origins, schemes included; everything from panes reaches
// the page as JSON and is set as text, never as markup; the page runs no
// inline script (a strict Content-Security-Policy). Failed attempts past
// MaxFailures a minute are answered 429, but a valid credential is always
// checked first and never refused. The live feed is built once per change
// for all clients, each client gets the whole state first and then only
// the cards that changed (or the whole latest state if it fell behind),
// and a client that stops reading is dropped without holding up the others; at most
// MaxClients are connected at once. Assets are plain HTML/CSS/JS, embedded.
package board

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/term"
)

//go:embed assets
var assets embed.FS

// Backend is what the board needs from the daemon.
type Backend interface {
	Panes() []api.Pane
	StyledScreen(id string) ([][]term.Run, error)
	Answer(id, choice string) (string, error)
	Send(id, text string, enter bool) error
	Kill(id string) error
	// Prompt is what a blocked pane's prompt takes.
	Prompt(id string) Prompt
	// Changed returns a channel that receives after state changes.
	Changed() (<-chan struct{}, func())
}

// HostLister is a Backend in a fleet: it lists every host, so that a host
// with no pane has its heading too.
type HostLister interface {
	Hosts() []Host
}

// Host is one fleet host as the page gets it.
type Host struct {
	Host      string `json:"host"`
	Reachable bool   `json:"reachable"`
}

// Server is a running web board.
type Server struct {
	Addr   string // where it listens, host:port
	id     string // the secret path prefix: every page is under /b/ID/
	base   string // "/b/ID/"
	cookie string // the session cookie's name, this board's own
	port   string
	listen net.IP // the address listened on; unspecified for --listen-any
	b      Backend
	srv    *http.Server
	ln     net.Listener
	limit  *limitListener // caps ln's connections

	mu       sync.Mutex // guards codes, sessions, failures, clients, ifaddrs
	codes    map[string]time.Time
	sessions map[string]time.Time
	failures []time.Time
	clients  int
	ifaddrs  []net.IP
	ifat     time.Time

	feed   *feed
	build  builder
	closed chan struct{}
}

// Limits on credentials and clients.
const (
	// MaxFailures per minute before failed attempts are answered 429.
	MaxFailures = 10
	// CodeTTL is how long a sign-in code is good for (once).
	CodeTTL = 2 * time.Minute
	// MaxCodes and MaxSessions bound what the board remembers; the oldest
	// goes first.
	MaxCodes    = 16
	MaxSessions = 64
	// MaxClients is how many WebSockets a board serves at once.
	MaxClients = 64
	// MinInterval is the least time between two states the board builds.
	MinInterval = 100 * time.Millisecond
	// WriteTimeout is how long a client may take to accept one state
	// message before it is dropped.
	WriteTimeout = 5 * time.Second
)

// writeTimeout is WriteTimeout, shortened by the package's tests, which
// wait it out.
var writeTimeout = WriteTimeout

// ErrRemote is returned for a non-loopback address without allowRemote.
var ErrRemote = errors.New("the board listens on loopback only unless you pass --listen-any")

func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Start serves the board on addr ("127.0.0.1:0" picks a port).
func Start(addr string, allowRemote bool, b Backend) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("board address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); !allowRemote && (ip == nil && host != "localhost" || ip != nil && !ip.IsLoopback()) {
		return nil, ErrRemote
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("board: %w", err)
	}
	tcp := ln.Addr().(*net.TCPAddr)
	id := random(16)
	s := &Server{id: id, base: "/b/" + id + "/", cookie: "corral-board-" + id[:8], b: b, ln: ln, Addr: ln.Addr().String(),
		port: strconv.Itoa(tcp.Port), listen: tcp.IP, codes: map[string]time.Time{}, sessions: map[string]time.Time{},
		closed: make(chan struct{})}
	s.feed = newFeed()
	s.srv = &http.Server{Handler: s.routes(), ReadHeaderTimeout: HeaderTimeout, IdleTimeout: IdleTimeout}
	s.limit = newLimitListener(ln, MaxConns, MaxConnsPerPeer)
	go s.srv.Serve(s.limit)
	go s.broadcast()
	return s, nil
}

// Close stops the board.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	select {
	case <-s.closed:
	default:
		close(s.closed)
	}
	return s.srv.Shutdown(ctx)
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	for _, r := range []struct {
		pattern string
		handler http.Handler
	}{
		{"GET " + s.base + "{$}", asset("index.html", "text/html; charset=utf-8")},
		{"GET " + s.base + "app.js", asset("app.js", "text/javascript; charset=utf-8")},
		{"GET " + s.base + "app.css", asset("app.css", "text/css; charset=utf-8")},
		{"GET " + s.base + "ws", http.HandlerFunc(s.handleWS)},
		{"POST " + s.base + "api/panes/{id}/answer", s.action(s.answer)},
		{"POST " + s.base + "api/panes/{id}/send", s.action(s.send)},
		{"POST " + s.base + "api/panes/{id}/kill", s.action(s.kill)},
	} {
		mux.Handle(r.pattern, r.handler)
	}
	return s.secure(mux)
}

func asset(name, ctype string) http.Handler {
	body, err := assets.ReadFile("assets/" + name)
	if err != nil {
		panic(err) // embedded at build time
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.Write(body)
	})
}

// action wraps a POST: same origin only, a JSON body, a JSON answer.
func (s *Server) action(f func(id string, body map[string]any) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !sameOrigin(r) || r.Header.Get("X-Corral") != "1" {
			http.Error(w, "cross-site request refused", http.StatusForbidden)
			return
		}
		var body map[string]any
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&body); err != nil {
			http.Error(w, "bad request body", http.StatusBadRequest)
			return
		}
		out, err := f(r.PathValue("id"), body)
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(http.StatusConflict)
			json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		json.NewEncoder(w).Encode(out)
	})
}

func str(body map[string]any, key string) string {
	v, _ := body[key].(string)
	return v
}

func (s *Server) answer(id string, body map[string]any) (any, error) {
	keys, err := s.b.Answer(id, str(body, "choice"))
	return map[string]string{"keys": keys}, err
}

func (s *Server) send(id string, body map[string]any) (any, error) {
	enter, _ := body["enter"].(bool)
	return map[string]bool{"ok": true}, s.b.Send(id, str(body, "text"), enter)
}

func (s *Server) kill(id string, _ map[string]any) (any, error) {
	return map[string]bool{"ok": true}, s.b.Kill(id)
}
