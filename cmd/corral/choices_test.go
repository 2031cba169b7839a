package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/fleet"
)

// noticeScript draws Claude Code's auto-mode notice (the one offering
// shift+Tab) and then, in its place, the first three keys it reads; or its
// billing notice (Enter or Esc alone).
func noticeScript(shiftTab bool) string {
	body, footer := `Auto mode can'"'"'t check actions in this session`,
		"Enter to stay in auto mode · shift+Tab to leave for accept edits mode and stop · Esc to cancel"
	if !shiftTab {
		body, footer = `We'"'"'re changing auto mode to no longer charge for classifier requests.`, "Enter to continue · Esc to cancel"
	}
	return `printf '%s\r\n  ` + body + `\r\n\r\n  ` + footer + `\r\n' ────────────────────────────────────────; ` +
		`stty raw -echo; printf '\033[2J\033[Htyped:[%s]\r\n' "$(head -c 3 | od -An -c | tr -s ' ')"; sleep 60`
}

// A prompt's own choice end to end: the pane lists it (corral ls --json,
// GET /v1/panes/ID, corral answer ID), corral answer refuses a name the
// prompt lacks with what it takes (exit 3), types the choice's keys, and
// refuses it once the pane is no longer blocked on it; a notice whose rule
// declares no such choice neither offers nor takes it.
func TestAnswerARulesOwnChoice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("run", "--name", "cc", "--agent", "claude-code", "--size", "120x32", "--", "sh", "-c", noticeScript(true))
	e.must("run", "--name", "bill", "--agent", "claude-code", "--size", "120x32", "--", "sh", "-c", noticeScript(false))
	for _, n := range []string{"cc", "bill"} {
		e.must("wait", n, "--state", "blocked", "--timeout", "20s")
	}

	var panes []api.Pane
	if err := json.Unmarshal([]byte(e.must("ls", "--json")), &panes); err != nil {
		t.Fatal(err)
	}
	prompts := map[string]*api.Prompt{}
	for _, p := range panes {
		prompts[p.Name] = p.Prompt
	}
	label := "leave for accept edits mode and stop"
	if pr := prompts["cc"]; pr == nil || pr.Rule != "notice" || strings.Join(pr.Answers, " ") != "yes no cancel" || pr.Options ||
		len(pr.Choices) != 1 || pr.Choices[0] != (api.Choice{Name: "accept-edits", Label: label}) {
		t.Fatalf("cc's prompt in ls --json: %+v", pr)
	}
	if pr := prompts["bill"]; pr == nil || pr.Rule != "notice-continue" || strings.Join(pr.Answers, " ") != "yes no cancel" || len(pr.Choices) != 0 {
		t.Fatalf("bill's prompt in ls --json: %+v", pr)
	}
	var one api.Pane
	if !e.look("/v1/panes/cc", &one) || one.Prompt == nil || len(one.Prompt.Choices) != 1 {
		t.Fatalf("GET /v1/panes/cc: %+v", one.Prompt)
	}

	out := e.must("answer", "cc")
	if !strings.Contains(out, "yes\n") || !strings.Contains(out, "cancel\n") || !strings.Contains(out, "accept-edits  "+label+"\n") {
		t.Fatalf("corral answer cc:\n%s", out)
	}
	var pr api.Prompt
	if err := json.Unmarshal([]byte(e.must("answer", "cc", "--json")), &pr); err != nil || len(pr.Choices) != 1 {
		t.Fatalf("corral answer cc --json: %+v %v", pr, err)
	}
	if out := e.must("answer", "bill"); strings.Contains(out, "accept-edits") {
		t.Fatalf("the billing notice offers accept-edits:\n%s", out)
	}
	// The shell completes what each prompt takes now.
	for pane, want := range map[string]string{"cc": "accept-edits\ncancel\nno\nyes\n:4\n", "bill": "cancel\nno\nyes\n:4\n"} {
		if out := e.must("__complete", "answer", pane, ""); out != want {
			t.Fatalf("completion of corral answer %s: %q, want %q", pane, out, want)
		}
	}

	for _, c := range []struct{ pane, choice, says string }{
		{"cc", "accept", "it knows yes, no, cancel, accept-edits (" + label + ")"},
		{"cc", "1", "it knows yes, no, cancel, accept-edits"},
		{"bill", "accept-edits", "it knows yes, no, cancel"},
	} {
		_, errs, code := e.run("answer", c.pane, c.choice)
		if code != 3 || !strings.Contains(errs, `no such answer "`+c.choice+`"`) || !strings.Contains(errs, c.says) {
			t.Errorf("corral answer %s %s: exit %d, %q; want 3 saying %q", c.pane, c.choice, code, errs, c.says)
		}
	}

	var res api.AnswerResult
	if err := json.Unmarshal([]byte(e.must("answer", "cc", "accept-edits", "--json")), &res); err != nil || res.Keys != "\x1b[Z" {
		t.Fatalf("corral answer cc accept-edits: %+v %v", res, err)
	}
	waitFor(t, 10*time.Second, "shift+Tab read by the program", func() bool { return strings.Contains(e.screen("cc"), "typed:[ 033 [ Z]") })
	e.must("wait", "cc", "--state", "working,idle,done", "--timeout", "10s") // no ready screen: it may read starting
	if _, errs, code := e.run("answer", "cc", "accept-edits"); code != 3 || !strings.Contains(errs, "not blocked") {
		t.Errorf("accept-edits once the notice is gone: exit %d, %q", code, errs)
	}
	if _, errs, code := e.run("answer", "cc"); code != 3 || !strings.Contains(errs, "not blocked") {
		t.Errorf("corral answer cc once the notice is gone: exit %d, %q", code, errs)
	}
	// The billing notice typed nothing: the refused choice left it waiting.
	if s := e.screen("bill"); strings.Contains(s, "typed:") {
		t.Errorf("the billing notice read keys:\n%s", s)
	}
}

// The web board offers a prompt's own choices by their labels beside its
// answers, and a click answers with the choice.
func TestWebBoardOffersARulesOwnChoice(t *testing.T) {
	t.Parallel()
	chromium(t) // skips before any daemon starts when there is none
	e := newEnv(t)
	e.must("run", "--name", "cc", "--agent", "claude-code", "--size", "120x32", "--", "sh", "-c", noticeScript(true))
	e.must("wait", "cc", "--state", "blocked", "--timeout", "20s")
	signIn := strings.TrimSpace(strings.SplitN(e.must("board", "--no-browser"), "\n", 2)[0])
	ctx := browse(t, 90*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(signIn), chromedp.WaitVisible(chromedp.CSS(`section.card.state-blocked button.answer.choice`))); err != nil {
		t.Fatalf("the board never offered the choice: %v", err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("section.card.state-blocked button.answer")].map(b => b.textContent + "=" + b.dataset.choice).join(",")`))
	if want := "Yes=yes,No=no,Cancel=cancel,leave for accept edits mode and stop=accept-edits"; err != nil || got != want {
		t.Fatalf("answer buttons %q (%v), want %q", got, err, want)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`section.card.state-blocked button.answer.choice`))); err != nil {
		t.Fatalf("click the choice: %v", err)
	}
	waitFor(t, 10*time.Second, "shift+Tab read by the program", func() bool { return strings.Contains(e.screen("cc"), "typed:[ 033 [ Z]") })
}

// A prompt's own choice across the fleet: the hub sees what the host's
// pane takes (its record carries the prompt, choices included), and
// corral answer HOST:NAME CHOICE types the choice's keys on that host.
func TestFleetAnswersARulesOwnChoice(t *testing.T) {
	t.Parallel()
	hub, b := fleetPair(t)
	b.must("run", "--name", "cc", "--agent", "claude-code", "--size", "120x32", "--", "sh", "-c", noticeScript(true))
	b.must("wait", "cc", "--state", "blocked", "--timeout", "20s")
	waitFor(t, 10*time.Second, "b:cc's prompt and its choice on the hub", func() bool {
		return hub.inFleet(func(p fleet.PaneRecord) bool {
			return p.Host == "b" && p.Name == "cc" && p.Prompt != nil && len(p.Prompt.Choices) == 1 && p.Prompt.Choices[0].Name == "accept-edits"
		})
	})
	if _, errs, code := hub.run("answer", "b:cc", "accept"); code != 3 || !strings.Contains(errs, "accept-edits") {
		t.Fatalf("a name b:cc's prompt lacks, from the hub: exit %d, %q", code, errs)
	}
	hub.must("answer", "b:cc", "accept-edits")
	waitFor(t, 10*time.Second, "shift+Tab read by b's program", func() bool { return strings.Contains(b.screen("cc"), "typed:[ 033 [ Z]") })
}
