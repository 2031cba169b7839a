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
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

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

// SignIn mints a one-time code and returns the addresses that trade it
// for a session: one per address the board can be reached at (loopback
// first), each good until one of them is used or CodeTTL passes.
func (s *Server) SignIn() []string {
	code := random(16)
	s.mu.Lock()
	now := time.Now()
	for c, exp := range s.codes {
		if now.After(exp) {
			delete(s.codes, c)
		}
	}
	evictOldest(s.codes, MaxCodes-1)
	s.codes[code] = now.Add(CodeTTL)
	s.mu.Unlock()
	ips := s.hostIPs()
	if len(ips) == 0 { // no interface address of the listener's family
		ips = []net.IP{s.listen}
	}
	var out []string
	for _, ip := range ips {
		out = append(out, "http://"+net.JoinHostPort(ip.String(), s.port)+s.base+"?code="+code)
	}
	return out
}

// evictOldest drops the entries with the earliest times until at most n remain.
func evictOldest(m map[string]time.Time, n int) {
	for len(m) > n {
		var oldest string
		for k, t := range m {
			if oldest == "" || t.Before(m[oldest]) {
				oldest = k
			}
		}
		delete(m, oldest)
	}
}

// hostIPs lists the addresses the board answers at: the one it listens
// on, or with a wildcard every interface address a browser can use
// (link-local addresses need a zone, which browsers do not take).
func (s *Server) hostIPs() []net.IP {
	if !s.listen.IsUnspecified() {
		return []net.IP{s.listen}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.ifat) < 5*time.Second {
		return s.ifaddrs
	}
	addrs, _ := net.InterfaceAddrs()
	var loop, other []net.IP
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLinkLocalUnicast() || (s.listen.To4() != nil && n.IP.To4() == nil) {
			continue
		}
		if n.IP.IsLoopback() {
			loop = append(loop, n.IP)
		} else {
			other = append(other, n.IP)
		}
	}
	s.ifaddrs, s.ifat = append(loop, other...), time.Now()
	return s.ifaddrs
}

// hostOK says a Host header names this board: its port and one of its
// addresses, or localhost when it listens on loopback. A page whose name
// was rebound to this address carries its own name and is refused.
func (s *Server) hostOK(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || port != s.port {
		return false
	}
	if host == "localhost" {
		return s.listen.IsLoopback() || s.listen.IsUnspecified()
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if s.listen.IsLoopback() {
		return ip.IsLoopback()
	}
	for _, a := range s.hostIPs() {
		if a.Equal(ip) {
			return true
		}
	}
	return false
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

// secure adds the headers every answer carries, checks the Host and the
// credential, and trades a sign-in code for a session.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		if !s.hostOK(r.Host) {
			http.Error(w, "this board answers only at the addresses corral board printed", http.StatusMisdirectedRequest)
			return
		}
		if code := r.URL.Query().Get("code"); code != "" && r.URL.Path == s.base {
			if s.signedIn(r) { // a sign-in address from the history, say
				http.Redirect(w, r, s.base, http.StatusSeeOther)
				return
			}
			if !s.redeem(code) {
				s.refuse(w, "this sign-in address was used already or is more than 2 minutes old: run corral board for a new one")
				return
			}
			session := random(32)
			s.mu.Lock()
			evictOldest(s.sessions, MaxSessions-1)
			s.sessions[session] = time.Now()
			s.mu.Unlock()
			http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: session, Path: s.base, HttpOnly: true, SameSite: http.SameSiteStrictMode})
			// Not a redirect: a browser sent here by another page (the
			// sign-in page on disk) would not send a SameSite=Strict
			// cookie along a redirect it started. The board's own page
			// moving on is same-site, and the code leaves the address bar.
			h.Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, signedIn, s.base, s.base)
			return
		}
		if r.URL.Path == "/favicon.ico" { // asked for by browsers, not a sign-in attempt
			http.NotFound(w, r)
			return
		}
		if !strings.HasPrefix(r.URL.Path, s.base) || !s.signedIn(r) {
			s.refuse(w, "this board needs signing in: open the address corral board prints")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// signedIn is the page a sign-in answers with; it moves on to the board.
const signedIn = `<!doctype html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="0; url=%s"><title>corral</title></head>
<body><p>Signed in. <a href="%s">Open the board</a>.</p></body></html>
`

func (s *Server) redeem(code string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c, exp := range s.codes {
		if subtle.ConstantTimeCompare([]byte(c), []byte(code)) == 1 {
			delete(s.codes, c)
			return time.Now().Before(exp)
		}
	}
	return false
}

func (s *Server) signedIn(r *http.Request) bool {
	c, err := r.Cookie(s.cookie)
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for v := range s.sessions {
		if subtle.ConstantTimeCompare([]byte(v), []byte(c.Value)) == 1 {
			return true
		}
	}
	return false
}

// refuse answers a request without a valid credential: 401, or 429 once
// failures pass MaxFailures a minute. Only failed attempts are counted
// and refused, so nobody can lock the board's user out by failing.
func (s *Server) refuse(w http.ResponseWriter, why string) {
	s.mu.Lock()
	now := time.Now()
	recent := s.failures[:0]
	for _, t := range s.failures {
		if now.Sub(t) < time.Minute {
			recent = append(recent, t)
		}
	}
	limited := len(recent) >= MaxFailures
	if !limited {
		recent = append(recent, now)
	}
	s.failures = recent
	s.mu.Unlock()
	if limited {
		http.Error(w, "too many failed attempts; wait a minute", http.StatusTooManyRequests)
		return
	}
	http.Error(w, why, http.StatusUnauthorized)
}

// sameOrigin says a request comes from the board's own page: an Origin
// of exactly http:// and the (checked) Host, or no Origin and not a
// cross-site fetch.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	return origin == "" && r.Header.Get("Sec-Fetch-Site") != "cross-site" || origin == "http://"+r.Host
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

// card is one pane as the page gets it.
type card struct {
	api.Pane
	Screen  [][]term.Run `json:"screen"`
	Answers []string     `json:"answers"`
	Options []option     `json:"options"`
}

// feed holds the latest state: whole, and as the change from the one
// before. Every client sends from there, so a client that is slow to
// read only misses states: one that has the state before gets the
// change, any other the whole state.
type feed struct {
	mu    sync.Mutex
	full  []byte // {"type":"state","panes":[every card]}
	delta []byte // {"type":"delta","panes":[changed cards],"gone":[keys]}
	seq   uint64
	ready chan struct{} // closed and replaced on every new message
}

func newFeed() *feed { return &feed{ready: make(chan struct{})} }

// set publishes a state; a nil delta means nothing changed.
func (f *feed) set(full, delta []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if delta == nil && f.full != nil {
		return
	}
	f.full, f.delta, f.seq = full, delta, f.seq+1
	close(f.ready)
	f.ready = make(chan struct{})
}

// next is what a client that last sent seq sent should send now, if
// anything, the feed's seq, and a channel closed on the next state.
func (f *feed) next(sent uint64) ([]byte, uint64, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.full == nil || f.seq == sent:
		return nil, f.seq, f.ready
	case sent != 0 && f.seq == sent+1 && f.delta != nil:
		return f.delta, f.seq, f.ready
	}
	return f.full, f.seq, f.ready
}

// builder turns the panes into state messages, remembering each card as
// last sent to tell what changed.
type builder struct {
	mu    sync.Mutex
	last  map[string]built // by the card's key
	size  int              // the last whole state's length
	hosts []byte           // the hosts as last sent (JSON; nil outside a fleet)
}

// built is a card as last sent: its JSON, and what it was made from, so
// that an unchanged card is not encoded again (a screen is most of it).
type built struct {
	rest   []byte // the card without its screen, as JSON
	screen [][]term.Run
	json   []byte
}

func sameScreen(a, b [][]term.Run) bool {
	return slices.EqualFunc(a, b, func(x, y []term.Run) bool { return slices.Equal(x, y) })
}

// cardKey names a card across a fleet, as the page does: host:id.
func cardKey(p api.Pane) string { return p.Host + ":" + p.ID }

// publish builds the state and hands it to the feed.
func (s *Server) publish() {
	s.build.mu.Lock()
	defer s.build.mu.Unlock()
	cards := s.cards()
	now := make(map[string]built, len(cards))
	full := append(make([]byte, 0, s.build.size+4096), `{"type":"state","panes":[`...)
	delta := []byte(`{"type":"delta","panes":[`)
	changed := false
	for i, c := range cards {
		key := cardKey(c.Pane)
		scr := c.Screen
		c.Screen = nil
		rest, _ := json.Marshal(c)
		old, ok := s.build.last[key]
		if ok && bytes.Equal(old.rest, rest) && sameScreen(old.screen, scr) {
			old.rest = rest
		} else {
			c.Screen = scr
			b, _ := json.Marshal(c)
			old = built{rest: rest, screen: scr, json: b}
			if changed {
				delta = append(delta, ',')
			}
			delta, changed = append(delta, b...), true
		}
		if i > 0 {
			full = append(full, ',')
		}
		full = append(full, old.json...)
		now[key] = old
	}
	var hosts []byte
	if hl, ok := s.b.(HostLister); ok {
		hosts, _ = json.Marshal(hl.Hosts())
		full = append(append(append(full, `],"hosts":`...), hosts...), '}')
	} else {
		full = append(full, "]}"...)
	}
	hostsChanged := !bytes.Equal(hosts, s.build.hosts)
	s.build.hosts = hosts
	s.build.size = len(full)
	var gone []string
	for key := range s.build.last {
		if _, ok := now[key]; !ok {
			gone = append(gone, key)
		}
	}
	s.build.last = now
	if !changed && len(gone) == 0 && !hostsChanged {
		s.feed.set(full, nil)
		return
	}
	g, _ := json.Marshal(gone)
	if gone == nil {
		g = []byte("[]")
	}
	delta = append(append(delta, `],"gone":`...), g...)
	if hosts != nil {
		delta = append(append(delta, `,"hosts":`...), hosts...)
	}
	delta = append(delta, '}')
	s.feed.set(full, delta)
}

// broadcast builds the board's state once for all clients: after every
// state change, and every half second for the live previews, while any
// client is connected.
func (s *Server) broadcast() {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var changed <-chan struct{}
	stop := func() {}
	defer func() { stop() }()
	for {
		s.mu.Lock()
		n := s.clients
		s.mu.Unlock()
		switch {
		case n > 0 && changed == nil:
			changed, stop = s.b.Changed()
		case n == 0 && changed != nil:
			stop()
			changed, stop = nil, func() {}
		}
		if n > 0 {
			s.publish()
			// A burst of changes is one new state, not one per change.
			select {
			case <-s.closed:
				return
			case <-time.After(MinInterval):
			}
		}
		select {
		case <-s.closed:
			return
		case <-changed:
		case <-tick.C:
		}
	}
}

// cards is every pane as the page gets it.
func (s *Server) cards() []card {
	cards := []card{}
	for _, p := range s.b.Panes() {
		scr, _ := s.b.StyledScreen(p.ID)
		c := card{Pane: p, Screen: scr, Answers: []string{}, Options: []option{}}
		if p.State == "blocked" {
			pr := s.b.Prompt(p.ID)
			if pr.Answers != nil {
				c.Answers = pr.Answers
			}
			if o := options(pr, scr); o != nil {
				c.Options = o
			}
		}
		cards = append(cards, c)
	}
	return cards
}

// wsOrigin says a WebSocket upgrade comes from the board's own page:
// browsers always send Origin with one, and it must be exactly http://
// and the (checked) Host.
func wsOrigin(r *http.Request) bool {
	return r.Header.Get("Origin") == "http://"+r.Host
}

// handleWS sends the latest state to one client whenever there is a new
// one. A client that takes more than WriteTimeout over one message is
// dropped; the others never wait for it.
func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	if !wsOrigin(r) {
		http.Error(w, "cross-origin WebSocket refused", http.StatusForbidden)
		return
	}
	s.mu.Lock()
	full, first := s.clients >= MaxClients, s.clients == 0
	if !full {
		s.clients++
	}
	s.mu.Unlock()
	if full {
		http.Error(w, fmt.Sprintf("the board has %d clients already; close some of its tabs", MaxClients), http.StatusServiceUnavailable)
		return
	}
	defer func() {
		s.mu.Lock()
		s.clients--
		s.mu.Unlock()
	}()
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true}) // the Origin was checked above
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context())
	if first {
		s.publish() // nobody kept it up to date
	}
	// The first message is the whole state, then the changes.
	var sent uint64
	for {
		msg, seq, ready := s.feed.next(sent)
		if msg != nil {
			wctx, cancel := context.WithTimeout(ctx, WriteTimeout)
			err := c.Write(wctx, websocket.MessageText, msg)
			cancel()
			if err != nil {
				return
			}
			sent = seq
		}
		select {
		case <-ctx.Done():
			return
		case <-s.closed:
			return
		case <-ready:
		}
	}
}
