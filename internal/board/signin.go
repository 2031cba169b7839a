package board

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

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
