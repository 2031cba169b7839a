package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds a Chromium to drive, or skips.
func chromium(t *testing.T) string {
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
func need(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("CORRAL_CI") == "1" {
		t.Fatalf("CI must provide %s", what)
	}
	t.Skip("no " + what)
}

// The web board in a real headless Chromium: two fake-agent panes; one
// blocks; its send box is disabled; clicking Yes answers it; HTML from a
// pane is shown as text; no token is 401; a cross-origin WebSocket fails.
func TestWebBoardInChromium(t *testing.T) {
	exe := chromium(t)
	e := newEnv(t)
	xss := `<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>`
	e.must("run", "--name", "alpha", "--agent", "claude-code", "--", corralBin, "fake-agent")
	e.must("run", "--name", "beta", "--agent", "claude-code", "--", corralBin, "fake-agent", "--osc7501", "--command", xss)
	// A script reporting through OSC 7501: progress and a child record.
	e.must("run", "--name", "deploy", "--", "sh", "-c", corralBin+" status working --progress 40 --app deploy; "+
		corralBin+" status working --id us-east --msg syncing; sleep 60")
	url := strings.TrimSpace(strings.SplitN(e.must("board", "--no-browser"), "\n", 2)[0])
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.Contains(url, "/?token=") {
		t.Fatalf("board address %q", url)
	}
	base := url[:strings.Index(url, "/?token=")]

	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", resp.StatusCode)
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

	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`section.card[data-id]`))); err != nil {
		t.Fatalf("open the board: %v", err)
	}
	location, _ := chromedp.Run(ctx, chromedp.Location())
	if strings.Contains(location, "token=") {
		t.Errorf("the token stayed in the address bar: %s", location)
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
	// board's WebSocket with the board's cookie in the jar.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<html><body><script>
const ws = new WebSocket(%q);
ws.onopen = () => { document.title = "opened"; };
ws.onerror = () => { document.title = "refused"; };
</script></body></html>`, strings.Replace(base, "http://", "ws://", 1)+"/ws")
	}))
	defer evil.Close()
	if err := chromedp.Do(ctx, chromedp.Navigate(evil.URL)); err != nil {
		t.Fatalf("cross-origin page: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.title !== ""`)); err != nil {
		t.Fatalf("cross-origin page: %v", err)
	}
	title, _ = chromedp.Run(ctx, chromedp.Title())
	if title != "refused" {
		t.Fatalf("a cross-origin page's WebSocket: %s", title)
	}
}
