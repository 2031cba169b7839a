package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/board"
	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/proctest"
)

// chromium finds a Chromium to drive, or skips. A browser costs 2-3 core
// seconds to start and drive: -short leaves the browser tests to the full run.
func chromium(t *testing.T) string {
	proctest.Slow(t, "drives a headless Chromium, 2-3 core seconds")
	for _, p := range []string{os.Getenv("CORRAL_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	need(t, "chromium (apt-get install chromium)")
	return ""
}

// need skips a test whose tool is missing, except in CI (CORRAL_CI=1),
// which installs every tool: there a missing tool is a failure, not a skip.
func need(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("CORRAL_CI") == "1" {
		t.Fatalf("CI must provide %s", what)
	}
	t.Skip("no " + what)
}

// The web board in a real headless Chromium, opened as corral board opens
// it: two fake-agent panes; one blocks; its send box is disabled; clicking
// Yes answers it; HTML from a pane is shown as text; not signed in is 401;
// a page on another port of the same host gets no cookie, cannot open the
// WebSocket and cannot lock the user out with failed sign-ins.
func TestWebBoardInChromium(t *testing.T) {
	t.Parallel()
	exe := chromium(t)
	e := newEnv(t)
	xss := `<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>`
	e.must("run", "--name", "alpha", "--agent", "claude-code", "--", corralBin, "fake-agent")
	e.must("run", "--name", "beta", "--agent", "claude-code", "--", corralBin, "fake-agent", "--osc7501", "--command", xss)
	// A script reporting through OSC 7501: progress and a child record.
	e.must("run", "--name", "deploy", "--", "sh", "-c", corralBin+" status working --progress 40 --app deploy; "+
		corralBin+" status working --id us-east --msg syncing; sleep 60")
	// corral board opens the browser with xdg-open; this one records
	// what it was given, and Chromium opens that.
	bin := filepath.Join(e.dir, "bin")
	os.Mkdir(bin, 0o755)
	opened := filepath.Join(e.dir, "opened")
	proctest.WriteExecutable(filepath.Join(bin, "xdg-open"), []byte("#!/bin/sh\nprintf '%s' \"$1\" > "+opened+".tmp && mv "+opened+".tmp "+opened+"\n"), 0o755)
	e.vars = append(e.vars, "PATH="+bin+":"+os.Getenv("PATH"))
	e.must("board")
	var target string
	waitFor(t, 10*time.Second, "corral board to run xdg-open", func() bool {
		b, _ := os.ReadFile(opened)
		target = string(b)
		return target != ""
	})
	if !strings.HasPrefix(target, "http") {
		target = "file://" + target
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	if err := chromedp.Do(ctx, chromedp.Navigate(target), chromedp.WaitVisible(chromedp.CSS(`section.card[data-id]`))); err != nil {
		t.Fatalf("open the board: %v", err)
	}
	location, _ := chromedp.Run(ctx, chromedp.Location())
	if strings.Contains(location, "token=") || strings.Contains(location, "code=") || !strings.HasPrefix(location, "http://127.0.0.1:") {
		t.Errorf("the board's address after signing in: %s", location)
	}
	u, _ := url.Parse(location)
	origin := "http://" + u.Host
	board := location // the board's page, signed in
	resp, err := http.Get(board)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("not signed in: %d", resp.StatusCode)
	}

	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!document.querySelector('section.card[data-id] .records li')`)); err != nil {
		t.Fatalf("no child records on the board: %v", err)
	}
	width, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("section.card")].find(c => c.querySelector(".name").textContent === "deploy").querySelector(".progress > div").style.width`))
	record, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(".records li").textContent`))
	if width != "40%" || !strings.HasPrefix(record, "us-east · working · syncing") {
		t.Errorf("progress bar %q, child record %q", width, record)
	}

	e.must("send", "beta", "ask", "--enter")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`section.card.state-blocked`))); err != nil {
		t.Fatalf("blocked card: %v", err)
	}
	disabled, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("section.card.state-blocked form.send input").disabled`))
	if err != nil {
		t.Fatal(err)
	}
	message, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("section.card.state-blocked .message").textContent`))
	title, _ := chromedp.Run(ctx, chromedp.Title())
	if !disabled {
		t.Error("the send box is enabled while the pane is blocked")
	}
	if !strings.Contains(message, "<script>window.pwned=2</script>") || !strings.HasPrefix(title, "(1 blocked)") {
		t.Errorf("message %q, title %q", message, title)
	}
	pwned, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`window.pwned === undefined ? 0 : 1`))
	injected, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("main img, main script").length`))
	if pwned != 0 || injected != 0 {
		t.Fatalf("HTML from a pane ran or was parsed: pwned=%d elements=%d", pwned, injected)
	}
	if shot := os.Getenv("CORRAL_SCREENSHOT"); shot != "" {
		if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
			os.WriteFile(shot, png, 0o644)
		}
	}

	// A phone-sized screen: one column, nothing wider than the screen.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	if wide, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); wide > 390 {
		t.Errorf("the board is %dpx wide on a 390px screen", wide)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}

	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`section.card.state-blocked button.answer`))); err != nil {
		t.Fatalf("click Yes: %v", err)
	}
	e.must("wait", "beta", "--state", "working,done", "--timeout", "10s")
	if err := chromedp.Do(ctx, chromedp.WaitNotPresent(chromedp.CSS(`section.card.state-blocked`))); err != nil {
		t.Fatalf("blocked card stayed: %v", err)
	}

	// A page from another origin (same host, another port) tries the
	// board's WebSocket, and fails a dozen sign-ins with <img>. Cookies are
	// not separated by port: the board's must not reach this server.
	var mu sync.Mutex
	var cookies []string
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cookies = append(cookies, r.Header.Values("Cookie")...)
		mu.Unlock()
		var imgs string
		for i := range 12 {
			imgs += fmt.Sprintf(`<img src="%s/?token=guess%d">`, origin, i)
		}
		fmt.Fprintf(w, `<html><body>%s<script>
const ws = new WebSocket(%q);
ws.onopen = () => { document.title = "opened"; };
ws.onerror = () => { document.title = "refused"; };
</script></body></html>`, imgs, strings.Replace(board, "http://", "ws://", 1)+"ws")
	}))
	defer evil.Close()
	if !strings.HasPrefix(evil.URL, "http://127.0.0.1:") {
		t.Fatalf("the other server %s is not on the board's host", evil.URL)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(evil.URL)); err != nil {
		t.Fatalf("cross-origin page: %v", err)
	}
	if err := pollAfterNavigate(ctx, `document.title !== "" && [...document.images].every(i => i.complete)`); err != nil {
		t.Fatalf("cross-origin page: %v", err)
	}
	title, _ = chromedp.Run(ctx, chromedp.Title())
	if title != "refused" {
		t.Errorf("a cross-origin page's WebSocket: %s", title)
	}
	mu.Lock()
	if len(cookies) != 0 {
		t.Errorf("the browser sent another server on the board's host %q", cookies)
	}
	mu.Unlock()
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.images.length`)); n != 12 {
		t.Errorf("the other page has %d images", n)
	}
	// The failed <img> sign-ins lock nobody out.
	bctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(bctx, chromedp.Navigate(board), chromedp.WaitVisible(chromedp.CSS(`section.card[data-id]`))); err != nil {
		t.Fatalf("the board after another page's failed sign-ins: %v", err)
	}
}

// pollAfterNavigate is chromedp.Poll right after a Navigate, tried again
// while it names the page's execution context from before the navigation.
// chromedp's Navigate returns when its listener sees the load event, and
// its target applies the Runtime events that came before (the old context
// cleared, the new one made) later, in another goroutine: a Poll in
// between sends the old context's id ("Cannot find context with specified
// id"), seen in 35 of 200 polls with the Go runtime busy.
func pollAfterNavigate(ctx context.Context, expr string) error {
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr))
		if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "Cannot find context with specified id") {
			return err
		}
	}
}

// signIn opens a sign-in address corral board printed in a client with a
// cookie jar and returns the client and the board's base address (ending
// in /).
func signIn(t *testing.T, addr string) (*http.Client, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	resp, err := c.Get(addr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sign in with %s: %d", addr, resp.StatusCode)
	}
	return c, addr[:strings.Index(addr, "?")]
}

// noFollow is a client that shows redirects instead of following them.
var noFollow = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// boardWS dials the board's WebSocket as its own page would.
func boardWS(ctx context.Context, c *http.Client, base string) (*websocket.Conn, *http.Response, error) {
	u, _ := url.Parse(base)
	hdr := http.Header{"Origin": {"http://" + u.Host}}
	ws, resp, err := websocket.Dial(ctx, strings.Replace(base, "http://", "ws://", 1)+"ws", &websocket.DialOptions{HTTPClient: c, HTTPHeader: hdr})
	if err == nil {
		ws.SetReadLimit(-1)
	}
	return ws, resp, err
}

// Many board clients, some never reading: the board caps its clients, and
// neither corral ls nor a client that reads is slowed much by the rest.
// The numbers are logged (go test -run TestBoardManyClients -v); the
// bounds are generous.
func TestBoardManyClients(t *testing.T) {
	proctest.Slow(t, "about 7 s")
	e := newEnv(t)
	// Full, coloured screens that change all the time.
	for i := 0; i < 4; i++ {
		e.must("run", "--name", fmt.Sprint("busy", i), "--", "sh", "-c",
			`while :; do i=0; while [ $i -lt 30 ]; do printf '\033[3%dm%s \033[1;4%dm%s\033[0m\n' $((i%8)) "$(date +%s.%N)" $((i%7)) "$i $i $i $i $i $i $i $i $i $i $i $i $i $i"; i=$((i+1)); done; sleep 0.05; done`)
	}
	addr := strings.TrimSpace(strings.SplitN(e.must("board", "--no-browser"), "\n", 2)[0])
	c, base := signIn(t, addr)
	quiet := lsMedian(e, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	// The board's user is watching when the others arrive.
	probe, _, err := boardWS(ctx, c, base)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.CloseNow()
	const readers, stuck = 200, 20
	var conns []*websocket.Conn
	defer func() {
		for _, ws := range conns {
			ws.CloseNow()
		}
	}()
	refused := 0
	for i := 0; i < stuck+readers; i++ {
		ws, _, err := boardWS(ctx, c, base)
		if err != nil {
			refused++
			continue
		}
		conns = append(conns, ws)
		if i >= stuck { // the first ones never read
			go func() {
				for {
					if _, _, err := ws.Read(ctx); err != nil {
						return
					}
				}
			}()
		}
	}
	if _, _, err := probe.Read(ctx); err != nil {
		t.Fatal(err)
	}
	var maxGap time.Duration
	var lsTimes []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 8; i++ {
			start := time.Now()
			if _, errs, code := e.run("ls"); code != 0 {
				t.Errorf("corral ls failed among the board's clients: %s", errs)
			}
			lsTimes = append(lsTimes, time.Since(start))
		}
	}()
	last := time.Now()
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); {
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, _, err := probe.Read(rctx)
		cancel()
		if err != nil {
			t.Fatalf("the reader was cut off: %v", err)
		}
		if gap := time.Since(last); gap > maxGap {
			maxGap = gap
		}
		last = time.Now()
	}
	<-done
	slices.Sort(lsTimes)
	t.Logf("%d more clients connected, %d refused; corral ls median %v max %v (%v with no clients); a reader's longest gap %v",
		len(conns), refused, lsTimes[len(lsTimes)/2], lsTimes[len(lsTimes)-1], quiet, maxGap)
	if len(conns)+1 > board.MaxClients {
		t.Errorf("%d board clients connected at once; the cap is %d", len(conns)+1, board.MaxClients)
	}
	if os.Getenv("CORRAL_E2E_RACE") == "1" {
		return // the race detector's daemon is too slow for times to mean anything
	}
	// The previews tick every half second: a reader held up by the
	// clients that never read would wait a client's WriteTimeout (5 s)
	// before the board dropped it; gaps were 0.4-1.4 s, and 2.9 s once at
	// a load average of 50. corral ls answers in milliseconds.
	if maxGap > board.WriteTimeout-time.Second || lsTimes[len(lsTimes)/2] > quiet+750*time.Millisecond {
		t.Errorf("a reader waited %v between messages; corral ls took %v (median; %v with no clients)", maxGap, lsTimes[len(lsTimes)/2], quiet)
	}
}

// lsMedian is the median time of n runs of corral ls.
func lsMedian(e *env, n int) time.Duration {
	var times []time.Duration
	for range n {
		start := time.Now()
		if _, errs, code := e.run("ls"); code != 0 {
			e.t.Errorf("corral ls: %s", errs)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	return times[n/2]
}

// The board's credentials: the browser is opened without a secret on any
// command line; a sign-in address works once; a session is refused under
// another host name (DNS rebinding) and from another scheme; failed
// attempts never lock out the board's user.
func TestWebBoardCredentials(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bin := filepath.Join(e.dir, "bin")
	os.Mkdir(bin, 0o755)
	opened := filepath.Join(e.dir, "opened")
	proctest.WriteExecutable(filepath.Join(bin, "xdg-open"), []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > "+opened+".tmp && mv "+opened+".tmp "+opened+"\n"), 0o755)
	e.vars = append(e.vars, "PATH="+bin+":"+os.Getenv("PATH"))

	e.must("board")
	var args []string
	waitFor(t, 10*time.Second, "corral board to run xdg-open", func() bool {
		b, err := os.ReadFile(opened)
		args = strings.Fields(string(b))
		return err == nil
	})
	// Anyone can read a command line (/proc/PID/cmdline); the opener gets
	// a file only the user can read.
	if len(args) != 1 || strings.Contains(args[0], "?") {
		t.Fatalf("xdg-open %q: a secret on a command line", args)
	}
	launch := strings.TrimPrefix(args[0], "file://")
	fi, err := os.Stat(launch)
	if err != nil {
		t.Fatalf("xdg-open %q: %v", args, err)
	}
	dir, _ := os.Stat(filepath.Dir(launch))
	if fi.Mode().Perm()&0o077 != 0 || dir.Mode().Perm()&0o077 != 0 {
		t.Errorf("the page xdg-open opens is %v in a folder %v; only the user may read it", fi.Mode(), dir.Mode())
	}

	addr := strings.TrimSpace(strings.SplitN(e.must("board", "--no-browser"), "\n", 2)[0])
	c, base := signIn(t, addr)
	resp, err := noFollow.Get(addr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a sign-in address used twice: %d", resp.StatusCode)
	}
	u, _ := url.Parse(base)
	get := func(host string) int {
		t.Helper()
		// As a rebinding page's browser would: the cookie for the
		// address, whatever the name in Host.
		req, _ := http.NewRequest("GET", base, nil)
		req.Host = host
		for _, ck := range c.Jar.Cookies(u) {
			req.AddCookie(ck)
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(u.Host); code != http.StatusOK {
		t.Fatalf("signed in: %d", code)
	}
	if code := get("rebind.example:" + u.Port()); code != http.StatusMisdirectedRequest {
		t.Errorf("a page under another host name (DNS rebinding) read the board: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, origin := range []string{"https://" + u.Host, "null", "http://rebind.example:" + u.Port()} {
		ws, _, err := websocket.Dial(ctx, strings.Replace(base, "http://", "ws://", 1)+"ws",
			&websocket.DialOptions{HTTPClient: c, HTTPHeader: http.Header{"Origin": {origin}}})
		if err == nil {
			ws.CloseNow()
			t.Errorf("the board's WebSocket opened for Origin %s", origin)
		}
	}

	// Wrong guesses from anyone (a web page's <img>, a local process).
	for i := 0; i < 30; i++ {
		for _, path := range []string{"/?token=guess", "/", base[len("http://"+u.Host):] + "?code=guess"} {
			resp, err := http.Get("http://" + u.Host + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	if code := get(u.Host); code != http.StatusOK {
		t.Errorf("the signed-in user after others' failed attempts: %d", code)
	}
	signIn(t, strings.TrimSpace(strings.SplitN(e.must("board", "--no-browser"), "\n", 2)[0]))
}

// With --listen-any the board prints an address per interface address a
// browser can open, never the wildcard.
func TestWebBoardListenAny(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out := e.must("board", "--no-browser", "--listen-any", "--addr", ":0")
	addrs, _ := net.InterfaceAddrs()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, line := range lines {
		u, err := url.Parse(line)
		if err != nil || u.Scheme != "http" {
			t.Fatalf("not an address: %q in\n%s", line, out)
		}
		ip := net.ParseIP(u.Hostname())
		known := false
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && ip != nil && n.IP.Equal(ip) {
				known = true
			}
		}
		if !known {
			t.Errorf("%q is not one of this machine's addresses %v", line, addrs)
		}
	}
	_, errs, code := e.run("run", "--size", "5000x5", "--", "true")
	if code != 2 || !strings.Contains(errs, "must each be from 2 to 1000") {
		t.Errorf("run --size 5000x5: exit %d, %q", code, errs)
	}
}

// Event WebSockets that never read do not slow a pane, corral ls or a
// client that reads; each is dropped once its queue fills; the daemon
// serves at most api.MaxEventSockets at once.
func TestEventSocketsSlowReaders(t *testing.T) {
	proctest.Slow(t, "about 9 s")
	e := newEnv(t)
	e.must("ls") // start the daemon
	c := client.New(filepath.Join(e.dir, "s.sock"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dial := func() (*websocket.Conn, error) {
		ws, _, err := websocket.Dial(ctx, "ws://corral/v1/events/ws", &websocket.DialOptions{HTTPClient: c.HTTPClient()})
		return ws, err
	}
	reader, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	defer reader.CloseNow()
	var conns []*websocket.Conn
	defer func() {
		for _, ws := range conns {
			ws.CloseNow()
		}
	}()
	for len(conns) < api.MaxEventSockets-1 {
		ws, err := dial()
		if err != nil {
			t.Fatalf("event stream %d: %v", len(conns)+2, err)
		}
		conns = append(conns, ws)
	}
	if ws, err := dial(); err == nil {
		ws.CloseNow()
		t.Fatalf("event stream %d opened; the cap is %d", api.MaxEventSockets+1, api.MaxEventSockets)
	}
	// A pane that changes state 600 times.
	const flips = 300
	e.must("run", "--name", "flip", "--", "sh", "-c",
		fmt.Sprintf(`i=0; while [ $i -lt %d ]; do printf '\033]7501;state=working\007'; sleep 0.005; printf '\033]7501;state=idle\007'; sleep 0.005; i=$((i+1)); done; printf '\033]7501;state=done\007'; sleep 60`, flips))
	var maxGap time.Duration
	lsDone := make(chan time.Duration, 1)
	go func() { lsDone <- lsMedian(e, 5) }()
	events := 0
	last := time.Now()
	for {
		_, data, err := reader.Read(ctx)
		if err != nil {
			t.Fatalf("the reading client was cut off after %d events: %v", events, err)
		}
		events++
		if gap := time.Since(last); gap > maxGap {
			maxGap = gap
		}
		last = time.Now()
		var ev struct{ Name, State string }
		json.Unmarshal(data, &ev)
		if ev.Name == "flip" && ev.State == "done" {
			break
		}
	}
	t.Logf("%d events with %d streams never reading: a reader's longest gap %v, corral ls median %v", events, len(conns), maxGap, <-lsDone)
	if maxGap > 3*time.Second {
		t.Errorf("the reader waited %v for an event", maxGap)
	}
}
