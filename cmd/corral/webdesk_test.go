package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestWebBoardOnADesktop opens the web board in Chromium at 1400x900:
// cards share the width in a grid, a 100-column preview fits its card
// without a scrollbar, a question offers its own choices ("1 Red") from
// the agent's hook, a screen-only menu its choices read from the screen,
// and a permission prompt only its manifest's answers.
func TestWebBoardOnADesktop(t *testing.T) {
	t.Parallel()
	exe := chromium(t)
	e := newEnv(t)
	src, _ := filepath.Abs("../../testdata/hooks/claude-question.json")
	menu := `printf '\033[2J\033[H ☐ Colour\r\n\r\nWhich colour should the new file use?\r\n\r\n❯ 1. Crimson\r\n  2. Navy\r\n\r\nEnter to select · ↑/↓ to navigate · Esc to cancel'; sleep 60`
	// The hook's question (Red, Blue) names the choices, not the screen.
	e.must("run", "--name", "hooked", "--agent", "claude-code", "--size", "100x30", "--", "sh", "-c", corralBin+" hook < "+src+"; "+menu)
	// A menu on screen alone.
	e.must("run", "--name", "screen", "--agent", "claude-code", "--size", "100x30", "--", "sh", "-c", menu)
	e.must("run", "--name", "perm", "--agent", "claude-code", "--size", "100x30", "--", corralBin, "fake-agent", "--command", strings.Repeat("x", 90))
	e.must("send", "perm", "ask", "--enter")
	for _, n := range []string{"hooked", "screen", "perm"} {
		e.must("wait", n, "--state", "blocked", "--timeout", "20s")
	}
	signIn := strings.TrimSpace(strings.SplitN(e.must("board", "--no-browser"), "\n", 2)[0])

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1400, 900), chromedp.Navigate(signIn),
		chromedp.WaitVisible(chromedp.CSS(`section.card[data-id]`))); err != nil {
		t.Fatalf("open the board: %v", err)
	}
	// Wait for all three cards, then read the page.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll("section.card.state-blocked .actions button.answer").length >= 7`)); err != nil {
		t.Fatalf("cards never showed their answers: %v", err)
	}
	buttons := func(name string) string {
		t.Helper()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...[...document.querySelectorAll("section.card")].find(c => c.querySelector(".name").textContent === "`+name+`").querySelectorAll("button.answer")].map(b => b.textContent).join(",")`))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, c := range []struct{ pane, want string }{
		{"hooked", "1 Red,2 Blue,Cancel"},
		{"screen", "1 Crimson,2 Navy,Cancel"},
		{"perm", "Yes,Always,No,Cancel"},
	} {
		if got := buttons(c.pane); got != c.want {
			t.Errorf("%s's answer buttons: %q, want %q", c.pane, got, c.want)
		}
	}
	columns, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`new Set([...document.querySelectorAll("section.card")].map(c => c.getBoundingClientRect().left)).size`))
	if columns < 2 {
		t.Errorf("the cards are in %d column at 1400px", columns)
	}
	overflow, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("pre.screen")].filter(p => p.scrollWidth > p.parentElement.clientWidth).map(p => p.scrollWidth + ">" + p.parentElement.clientWidth).join(" ")`))
	if overflow != "" {
		t.Errorf("previews wider than their cards: %s", overflow)
	}
	// The permission prompt's 90-character command is whole on screen.
	shown, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`[...document.querySelectorAll("pre.screen")].some(p => p.textContent.includes("`+strings.Repeat("x", 90)+`"))`))
	if !shown {
		t.Error("the 90-column command is not in any preview")
	}
	if shot := os.Getenv("CORRAL_SCREENSHOT_DESK"); shot != "" {
		if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
			os.WriteFile(shot, png, 0o644)
		}
	}
	// Clicking "2 Blue" types the option's key.
	if err := chromedp.Do(ctx, chromedp.Click(`//section[.//span[@class="name" and text()="hooked"]]//button[text()="2 Blue"]`)); err != nil {
		t.Fatalf("click 2 Blue: %v", err)
	}
	waitFor(t, 10*time.Second, "the 2 typed into the hooked pane", func() bool {
		return strings.Contains(e.eventLines(time.Hour), `"name":"hooked"`) && strings.Contains(e.screen("hooked"), "2")
	})
	// The phone layout stays one column no wider than the screen.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	if wide, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); wide > 390 {
		t.Errorf("the board is %dpx wide on a 390px screen", wide)
	}
	if shot := os.Getenv("CORRAL_SCREENSHOT_PHONE"); shot != "" {
		if png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
			os.WriteFile(shot, png, 0o644)
		}
	}
}
