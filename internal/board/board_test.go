package board

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/proctest"
	"github.com/corral-dev/corral/internal/term"
)

func TestMain(m *testing.M) {
	// A client that stops reading is waited for this long before it is
	// dropped, and TestSlowClientDropped waits it out: 2 s here, as the
	// race detector's slower runs keep the real 5 s.
	if !proctest.Race {
		writeTimeout = 2 * time.Second
	}
	os.Exit(m.Run())
}

type fakeBackend struct{ answered []string }

func (f *fakeBackend) Panes() []api.Pane {
	return []api.Pane{{ID: "p1", Name: "<img src=x onerror=alert(1)>", State: "blocked", Message: "<script>alert(1)</script>"}}
}
func (f *fakeBackend) StyledScreen(string) ([][]term.Run, error) {
	return [][]term.Run{{{Text: "<b>hi</b>"}}}, nil
}
func (f *fakeBackend) Answer(id, choice string) (string, error) {
	f.answered = append(f.answered, id+":"+choice)
	return "y", nil
}
func (f *fakeBackend) Send(string, string, bool) error    { return errors.New("blocked") }
func (f *fakeBackend) Kill(string) error                  { return nil }
func (f *fakeBackend) Prompt(string) Prompt               { return Prompt{Answers: []string{"yes", "no"}} }
func (f *fakeBackend) Changed() (<-chan struct{}, func()) { return make(chan struct{}), func() {} }

func start(t *testing.T) (*Server, *fakeBackend) {
	t.Helper()
	fb := &fakeBackend{}
	s, err := Start("127.0.0.1:0", false, fb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, fb
}

func noRedirect(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string) *http.Response {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// signIn trades a fresh sign-in code for a session in a new cookie jar.
func signIn(t *testing.T, s *Server) (*http.Client, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)
	if resp := get(t, c, s.SignIn()[0]); resp.StatusCode != http.StatusOK {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}
	return c, "http://" + s.Addr + s.base
}

func TestSignInAndCookie(t *testing.T) {
	s, _ := start(t)
	base := "http://" + s.Addr + s.base
	c := noRedirect(nil)
	for _, u := range []string{"http://" + s.Addr + "/", base, base + "app.js", base + "ws", base + "?code=wrong", "http://" + s.Addr + "/?token=wrong"} {
		if resp := get(t, c, u); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without signing in: %d", u, resp.StatusCode)
		}
	}
	signin := s.SignIn()
	if len(signin) != 1 || !strings.HasPrefix(signin[0], base+"?code=") {
		t.Fatalf("sign-in addresses %q", signin)
	}
	jar, _ := cookiejar.New(nil)
	c = noRedirect(jar)
	resp := get(t, c, signin[0])
	cookie := resp.Header.Get("Set-Cookie")
	// Cookies are not separated by port: the path, which only the board's
	// user knows, keeps the browser from sending it to other servers.
	for _, want := range []string{"corral-board-" + s.id[:8] + "=", "HttpOnly", "SameSite=Strict", "Path=" + s.base} {
		if resp.StatusCode != http.StatusOK || !strings.Contains(cookie, want) {
			t.Fatalf("sign in: %d %q, want %q", resp.StatusCode, cookie, want)
		}
	}
	resp = get(t, c, base)
	csp := resp.Header.Get("Content-Security-Policy")
	if resp.StatusCode != 200 || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("with cookie: %d, CSP %q", resp.StatusCode, csp)
	}
	if resp := get(t, noRedirect(nil), signin[0]); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a sign-in code used twice: %d", resp.StatusCode)
	}
	// The same address again from the signed-in browser (its history)
	// goes to the board.
	if resp := get(t, c, signin[0]); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != s.base {
		t.Errorf("a used sign-in address, signed in: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	old := s.SignIn()[0]
	s.mu.Lock()
	for code := range s.codes {
		s.codes[code] = time.Now().Add(-time.Second)
	}
	s.mu.Unlock()
	if resp := get(t, noRedirect(nil), old); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an expired sign-in code: %d", resp.StatusCode)
	}
	// Another board's session is nothing here, even under this board's name.
	other, _ := start(t)
	oc, _ := signIn(t, other)
	ou, _ := url.Parse("http://" + other.Addr + other.base)
	req, _ := http.NewRequest("GET", base, nil)
	for _, ck := range oc.Jar.Cookies(ou) {
		req.AddCookie(&http.Cookie{Name: s.cookie, Value: ck.Value})
	}
	if resp, err := noRedirect(nil).Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("another board's session: %v %v", resp.StatusCode, err)
	}
}

// Failed attempts are limited; the board's user, whose credential is
// good, is never refused however many others fail.
func TestFailuresNeverLockOutTheUser(t *testing.T) {
	s, _ := start(t)
	c, base := signIn(t, s)
	var last int
	for i := 0; i < 3*MaxFailures; i++ {
		last = get(t, noRedirect(nil), "http://"+s.Addr+"/?token=guess"+fmt.Sprint(i)).StatusCode
	}
	if last != http.StatusTooManyRequests {
		t.Errorf("after %d failures: %d", 3*MaxFailures, last)
	}
	if resp := get(t, noRedirect(nil), "http://"+s.Addr+"/favicon.ico"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a browser's favicon request: %d", resp.StatusCode)
	}
	if resp := get(t, c, base); resp.StatusCode != http.StatusOK {
		t.Errorf("the signed-in user while others fail: %d", resp.StatusCode)
	}
	if resp := get(t, noRedirect(nil), s.SignIn()[0]); resp.StatusCode != http.StatusOK {
		t.Errorf("a fresh sign-in while others fail: %d", resp.StatusCode)
	}
}

// A Host header that is not the board's own address is refused, session
// or not: a page whose name was rebound to 127.0.0.1 carries its name.
func TestHostChecked(t *testing.T) {
	s, _ := start(t)
	c, base := signIn(t, s)
	u, _ := url.Parse(base)
	for _, tt := range []struct {
		host string
		code int
	}{
		{s.Addr, 200},
		{"localhost:" + s.port, 200},
		{"rebind.example:" + s.port, http.StatusMisdirectedRequest},
		{"127.0.0.1:1", http.StatusMisdirectedRequest},
		{"127.0.0.1", http.StatusMisdirectedRequest},
		{"192.0.2.1:" + s.port, http.StatusMisdirectedRequest},
	} {
		req, _ := http.NewRequest("GET", base, nil)
		req.Host = tt.host
		for _, ck := range c.Jar.Cookies(u) {
			req.AddCookie(ck)
		}
		resp, err := noRedirect(nil).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.code {
			t.Errorf("Host %s: %d, want %d", tt.host, resp.StatusCode, tt.code)
		}
	}
}

func cookieHeader(c *http.Client, base string) http.Header {
	u, _ := url.Parse(base)
	hdr := http.Header{}
	for _, ck := range c.Jar.Cookies(u) {
		hdr.Add("Cookie", ck.Name+"="+ck.Value)
	}
	return hdr
}

func TestCrossSiteRefused(t *testing.T) {
	s, fb := start(t)
	c, base := signIn(t, s)
	wsURL := "ws://" + s.Addr + s.base + "ws"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hdr := cookieHeader(c, base)
	for _, origin := range []string{"http://evil.example", "https://" + s.Addr, "null", ""} {
		hdr.Set("Origin", origin)
		if _, resp, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: hdr}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("WebSocket from Origin %q: %v %v", origin, err, resp)
		}
	}
	hdr.Set("Origin", "http://"+s.Addr)
	ws, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatalf("same-origin WebSocket: %v", err)
	}
	_, msg, err := ws.Read(ctx)
	ws.CloseNow()
	// Pane text travels as JSON data; the page sets it as text.
	if err != nil || !strings.Contains(string(msg), `\u003cscript\u003e`) {
		t.Fatalf("state message %q %v", msg, err)
	}
	post := func(origin, marker string) int {
		req, _ := http.NewRequest("POST", base+"api/panes/p1/answer", strings.NewReader(`{"choice":"yes"}`))
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if marker != "" {
			req.Header.Set("X-Corral", marker)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, origin := range []string{"http://evil.example", "https://" + s.Addr} {
		if code := post(origin, "1"); code != http.StatusForbidden {
			t.Errorf("answer from %s: %d", origin, code)
		}
	}
	if code := post("", ""); code != http.StatusForbidden {
		t.Errorf("answer without X-Corral: %d", code)
	}
	if code := post("http://"+s.Addr, "1"); code != 200 || len(fb.answered) != 1 {
		t.Errorf("same-origin answer: %d %v", code, fb.answered)
	}
}

// At most MaxClients WebSockets at once; a closed one frees its place.
func TestClientCap(t *testing.T) {
	s, _ := start(t)
	c, base := signIn(t, s)
	hdr := cookieHeader(c, base)
	hdr.Set("Origin", "http://"+s.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dial := func() (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(ctx, "ws://"+s.Addr+s.base+"ws", &websocket.DialOptions{HTTPHeader: hdr})
	}
	var conns []*websocket.Conn
	defer func() {
		for _, ws := range conns {
			ws.CloseNow()
		}
	}()
	for range MaxClients {
		ws, _, err := dial()
		if err != nil {
			t.Fatalf("client %d: %v", len(conns)+1, err)
		}
		conns = append(conns, ws)
	}
	if ws, resp, err := dial(); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		if ws != nil {
			ws.CloseNow()
		}
		t.Fatalf("client %d: %v %v", MaxClients+1, err, resp)
	}
	conns[0].CloseNow()
	var err error
	if !proctest.WaitFor(10*time.Second, func() bool {
		var ws *websocket.Conn
		if ws, _, err = dial(); err == nil {
			conns[0] = ws
		}
		return err == nil
	}) {
		t.Fatalf("a closed client's place was not freed: %v", err)
	}
}

func TestLoopbackOnlyUnlessAllowed(t *testing.T) {
	if _, err := Start("0.0.0.0:0", false, &fakeBackend{}); !errors.Is(err, ErrRemote) {
		t.Fatalf("0.0.0.0 without --listen-any: %v", err)
	}
	s, err := Start("0.0.0.0:0", true, &fakeBackend{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A browser cannot open the wildcard: one address per interface address.
	for _, u := range s.SignIn() {
		if strings.Contains(u, "0.0.0.0") || strings.Contains(u, "[::]") || !strings.Contains(u, ":"+s.port+s.base+"?code=") {
			t.Errorf("sign-in address %q", u)
		}
	}
}

// bigBackend has one pane whose state is large and changes all the time.
type bigBackend struct {
	fakeBackend
	mu sync.Mutex
	n  int
}

func (b *bigBackend) Panes() []api.Pane {
	b.mu.Lock()
	b.n++
	n := b.n
	b.mu.Unlock()
	return []api.Pane{{ID: "p1", State: "working", Message: fmt.Sprint(n) + strings.Repeat("x", 1<<20)}}
}

func (b *bigBackend) Changed() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		}
	}()
	return ch, func() { close(done) }
}

// A client that never reads holds up no other client, and is dropped
// once a message has waited writeTimeout for it.
func TestSlowClientDropped(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 3 s for a slow client to be dropped; go test without -short runs it")
	}
	s, err := Start("127.0.0.1:0", false, &bigBackend{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, base := signIn(t, s)
	hdr := cookieHeader(c, base)
	hdr.Set("Origin", "http://"+s.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dial := func() *websocket.Conn {
		ws, _, err := websocket.Dial(ctx, "ws://"+s.Addr+s.base+"ws", &websocket.DialOptions{HTTPHeader: hdr})
		if err != nil {
			t.Fatal(err)
		}
		ws.SetReadLimit(-1)
		return ws
	}
	stuck := dial()
	defer stuck.CloseNow()
	reader := dial()
	defer reader.CloseNow()
	clients := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.clients
	}
	var msgs int
	var maxGap time.Duration
	last := time.Now()
	for clients() > 1 {
		if _, _, err := reader.Read(ctx); err != nil {
			t.Fatalf("the reading client, after %d messages: %v", msgs, err)
		}
		msgs++
		maxGap = max(maxGap, time.Since(last))
		last = time.Now()
	}
	t.Logf("%d messages of 1 MiB to the reader, longest gap %v, before the stuck client was dropped", msgs, maxGap)
	if maxGap >= writeTimeout {
		t.Errorf("the reader waited %v for a message: as long as the stuck client held its write", maxGap)
	}
}

// Idle connections from one peer cannot use up the daemon's descriptors:
// past MaxConnsPerPeer they are closed at once, and the board still
// answers another request.
func TestBoardConnectionCaps(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newLimitListener(ln, 8, 3)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	var conns []net.Conn
	for i := 0; i < 10; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	proctest.WaitFor(5*time.Second, func() bool { return l.Refused() >= 7 })
	if got := l.Refused(); got != 7 {
		t.Fatalf("refused %d of 10 from one peer, want 7 (3 kept)", got)
	}
	for _, c := range conns {
		c.Close()
	}
	// Closed connections give their places back.
	var open int
	if !proctest.WaitFor(5*time.Second, func() bool {
		l.mu.Lock()
		open = l.open
		l.mu.Unlock()
		return open == 0
	}) {
		t.Fatalf("%d connections still counted", open)
	}
}
