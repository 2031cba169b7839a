package board

import (
	"context"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/term"
)

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
func (f *fakeBackend) AnswerNames(string) []string        { return []string{"yes", "no"} }
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

func TestTokenAndCookie(t *testing.T) {
	s, _ := start(t)
	base := "http://" + s.Addr
	c := noRedirect(nil)
	for _, path := range []string{"/", "/app.js", "/ws", "/?token=wrong"} {
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d", path, resp.StatusCode)
		}
	}
	jar, _ := cookiejar.New(nil)
	c = noRedirect(jar)
	resp, err := c.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookie := resp.Header.Get("Set-Cookie")
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") {
		t.Fatalf("token visit: %d %q", resp.StatusCode, cookie)
	}
	resp, err = c.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	if resp.StatusCode != 200 || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("with cookie: %d, CSP %q", resp.StatusCode, csp)
	}
}

func TestFailedTokensAreRateLimited(t *testing.T) {
	s, _ := start(t)
	c := noRedirect(nil)
	var last int
	for i := 0; i < MaxFailures+1; i++ {
		resp, _ := c.Get("http://" + s.Addr + "/?token=guess" + string(rune('a'+i)))
		resp.Body.Close()
		last = resp.StatusCode
	}
	if last != http.StatusTooManyRequests {
		t.Fatalf("after %d failures: %d", MaxFailures+1, last)
	}
	// Even the right token waits out the minute.
	resp, _ := c.Get(s.URL)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("right token while limited: %d", resp.StatusCode)
	}
}

func TestCrossSiteRefused(t *testing.T) {
	s, fb := start(t)
	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)
	resp, _ := c.Get(s.URL)
	resp.Body.Close()
	u, _ := url.Parse("http://" + s.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hdr := http.Header{"Origin": {"http://evil.example"}}
	for _, ck := range jar.Cookies(u) {
		hdr.Add("Cookie", ck.Name+"="+ck.Value)
	}
	if _, resp, err := websocket.Dial(ctx, "ws://"+s.Addr+"/ws", &websocket.DialOptions{HTTPHeader: hdr}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin WebSocket: %v %v", err, resp)
	}
	hdr.Set("Origin", "http://"+s.Addr)
	ws, _, err := websocket.Dial(ctx, "ws://"+s.Addr+"/ws", &websocket.DialOptions{HTTPHeader: hdr})
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
		req, _ := http.NewRequest("POST", "http://"+s.Addr+"/api/panes/p1/answer", strings.NewReader(`{"choice":"yes"}`))
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
	if code := post("http://evil.example", "1"); code != http.StatusForbidden {
		t.Errorf("cross-origin answer: %d", code)
	}
	if code := post("", ""); code != http.StatusForbidden {
		t.Errorf("answer without X-Corral: %d", code)
	}
	if code := post("http://"+s.Addr, "1"); code != 200 || len(fb.answered) != 1 {
		t.Errorf("same-origin answer: %d %v", code, fb.answered)
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
	s.Close()
}
