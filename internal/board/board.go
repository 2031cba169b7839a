// Package board is the web board: a page that shows every pane live, lets
// a person answer, type into and kill panes, and is safe to leave open.
// Every request needs the board's token (as ?token= once, then an
// HttpOnly SameSite=Strict cookie); WebSocket upgrades and actions are
// refused from other origins; everything from panes reaches the page as
// JSON and is set as text, never as markup; the page runs no inline script
// (a strict Content-Security-Policy); failed token attempts are
// rate-limited. Assets are plain HTML/CSS/JS, embedded.
package board

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"

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
	// AnswerNames lists the answers a pane's manifest defines (yes, always, no, cancel).
	AnswerNames(id string) []string
	// Changed returns a channel that receives after state changes.
	Changed() (<-chan struct{}, func())
}

// Server is a running web board.
type Server struct {
	URL   string // with the token
	Addr  string
	token string
	b     Backend
	srv   *http.Server
	ln    net.Listener

	mu       sync.Mutex // guards failures
	failures map[string][]time.Time
}

// CookieName holds the token after the first visit.
const CookieName = "corral_board"

// MaxFailures per minute per address before requests are refused with 429.
const MaxFailures = 10

// ErrRemote is returned for a non-loopback address without allowRemote.
var ErrRemote = errors.New("the board listens on loopback only unless you pass --listen-any")

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
	tok := make([]byte, 24)
	_, _ = rand.Read(tok)
	s := &Server{token: hex.EncodeToString(tok), b: b, ln: ln, Addr: ln.Addr().String(), failures: map[string][]time.Time{}}
	s.URL = "http://" + s.Addr + "/?token=" + s.token
	s.srv = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the board.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	for _, r := range []struct {
		pattern string
		handler http.Handler
	}{
		{"GET /{$}", files},
		{"GET /app.js", files},
		{"GET /app.css", files},
		{"GET /ws", http.HandlerFunc(s.handleWS)},
		{"POST /api/panes/{id}/answer", s.action(s.answer)},
		{"POST /api/panes/{id}/send", s.action(s.send)},
		{"POST /api/panes/{id}/kill", s.action(s.kill)},
	} {
		mux.Handle(r.pattern, r.handler)
	}
	return s.secure(mux)
}

// secure adds the headers every answer carries and checks the token.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		ip, _, _ := net.SplitHostPort(r.RemoteAddr)
		if s.limited(ip) {
			http.Error(w, "too many failed attempts; wait a minute", http.StatusTooManyRequests)
			return
		}
		if q := r.URL.Query().Get("token"); q != "" {
			if !s.valid(q) {
				s.fail(ip)
				http.Error(w, "wrong token", http.StatusUnauthorized)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: CookieName, Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			if r.URL.Path == "/" {
				http.Redirect(w, r, "/", http.StatusSeeOther) // the token leaves the address bar
				return
			}
		} else if c, err := r.Cookie(CookieName); err != nil || !s.valid(c.Value) {
			s.fail(ip)
			http.Error(w, "this board needs its token: open the address corral board printed", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) valid(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) == 1
}

func (s *Server) fail(ip string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[ip] = append(s.failures[ip], time.Now())
}

func (s *Server) limited(ip string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	recent := s.failures[ip][:0]
	for _, t := range s.failures[ip] {
		if time.Since(t) < time.Minute {
			recent = append(recent, t)
		}
	}
	s.failures[ip] = recent
	return len(recent) >= MaxFailures
}

// sameOrigin says a request comes from the board's own page.
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
}

// handleWS pushes the board's state: at once, after every state change,
// and every half second for the live previews.
func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	// coder/websocket refuses an Origin that is not the request's host.
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context())
	changed, stop := s.b.Changed()
	defer stop()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var last []byte
	for {
		var cards []card
		for _, p := range s.b.Panes() {
			scr, _ := s.b.StyledScreen(p.ID)
			answers := []string{}
			if p.State == "blocked" {
				answers = s.b.AnswerNames(p.ID)
			}
			cards = append(cards, card{Pane: p, Screen: scr, Answers: answers})
		}
		msg, _ := json.Marshal(map[string]any{"type": "state", "panes": cards})
		if string(msg) != string(last) {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := c.Write(wctx, websocket.MessageText, msg)
			cancel()
			if err != nil {
				return
			}
			last = msg
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick.C:
		}
	}
}
