package pane

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/proctest"
)

// startScript runs a shell script in a pane read by the claude-code
// manifest (whose rules know its permission prompt).
func startScript(t *testing.T, script string) *Pane {
	t.Helper()
	p, err := Start(Config{ID: "t1", Argv: []string{"sh", "-c", script}, Cols: 80, Rows: 24,
		Rules: ruleSet(t), Agent: "claude-code", Sweep: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(2 * time.Second) })
	return p
}

// A report that the program is blocked, under a dialog the rules do not
// know: "dialog open" (base64 in the report), then a mode's warning.
const unknownDialog = `printf '\033]7501;state=blocked:msg=ZGlhbG9nIG9wZW4=\033\\'; printf 'Auto mode cannot check actions\r\nEnter to continue, Esc to cancel\r\n'`

// The permission prompt the claude-code manifest's rule recognises.
const knownPrompt = `printf '%s\r\n Do you want to proceed?\r\n 1. Yes\r\n 2. No\r\n Esc to cancel\r\n' ────────────────────`

func TestAnswerRefusesAnUnknownDialog(t *testing.T) {
	t.Parallel()
	p := startScript(t, unknownDialog+`; IFS= read -r line; printf 'typed:[%s]\r\n' "$line"; `+knownPrompt+`; sleep 30`)
	in := await(t, p, "blocked by the report", inState(combine.Blocked))
	if in.Decision.Message != "dialog open" || in.Decision.Rule != "" {
		t.Fatalf("blocked: %+v", in.Decision)
	}
	if names, options := p.PromptAnswers(); len(names) > 0 || options {
		t.Fatalf("an unknown dialog offers answers %v (options %v)", names, options)
	}
	keys, err := p.Answer("yes")
	if !errors.Is(err, ErrUnknownPrompt) || keys != "" {
		t.Fatalf("answer yes to an unknown dialog: keys %q, %v", keys, err)
	}
	for _, want := range []string{"dialog open", "corral screen", "corral send"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("the refusal does not say %q: %v", want, err)
		}
	}
	if _, err := p.Answer("2"); !errors.Is(err, ErrUnknownPrompt) {
		t.Fatalf("an option number to an unknown dialog: %v", err)
	}
	// Nothing was typed: the person's own Enter is the first line read.
	if err := p.Input([]byte("\r"), false); err != nil {
		t.Fatal(err)
	}
	awaitScreen(t, p, "typed:[]")
	awaitScreen(t, p, "Do you want to proceed?")
	// The prompt the rules know takes the manifest's keys.
	if !proctest.WaitFor(5*time.Second, func() bool { names, _ := p.PromptAnswers(); return len(names) > 0 }) {
		t.Fatal("the recognised prompt offers no answers")
	}
	if keys, err := p.Answer("yes"); err != nil || keys != "1" {
		t.Fatalf("answer yes to the recognised prompt: %q %v", keys, err)
	}
}

// A report comes a moment before the agent draws its dialog: an answer in
// that moment waits for the dialog rather than being refused or lost.
func TestAnswerPromptWaitsForTheReportedPrompt(t *testing.T) {
	t.Parallel()
	drawn := filepath.Join(t.TempDir(), "draw")
	p := startScript(t, `printf '\033]7501;state=blocked:kind=permission\033\\'; until [ -e '`+drawn+`' ]; do sleep 0.05; done; `+
		knownPrompt+`; sleep 30`)
	await(t, p, "blocked by the report", inState(combine.Blocked))
	if _, err := p.Answer("yes"); !errors.Is(err, ErrUnknownPrompt) {
		t.Fatalf("an answer before the dialog is drawn, not waiting for it: %v", err)
	}
	// The dialog is drawn a moment after the answer is asked for.
	time.AfterFunc(300*time.Millisecond, func() { os.WriteFile(drawn, nil, 0o600) })
	if keys, err := p.AnswerPrompt("yes"); err != nil || keys != "1" {
		t.Fatalf("answer yes as the prompt is drawn: %q %v", keys, err)
	}
}

// An unknown dialog is refused after PromptDrawWait, not at once and not
// never.
func TestAnswerPromptRefusesAnUnknownDialog(t *testing.T) {
	t.Parallel()
	p := startScript(t, unknownDialog+`; sleep 30`)
	await(t, p, "blocked by the report", inState(combine.Blocked))
	start := time.Now()
	if _, err := p.AnswerPrompt("yes"); !errors.Is(err, ErrUnknownPrompt) {
		t.Fatalf("answer yes to an unknown dialog: %v", err)
	}
	if took := time.Since(start); took < PromptDrawWait || took > PromptDrawWait+5*time.Second {
		t.Fatalf("refused after %v; the dialog has %v to show", took, PromptDrawWait)
	}
}

// Claude Code's notices take Enter or Esc, and a digit typed into them
// does nothing: corral offers and types only the notice rule's answers,
// and refuses an option number with what it takes. This one offers no
// shift+Tab: no accept-edits either.
func TestAnswerTakesOnlyThePromptsOwnAnswers(t *testing.T) {
	t.Parallel()
	p := startScript(t, `printf '%s\r\n  Auto mode can'"'"'t check actions in this session\r\n\r\n  Enter to stay in auto mode · Esc to cancel\r\n' ────────────────────; `+
		`IFS= read -r line; printf 'typed:[%s]\r\n' "$line"; sleep 30`)
	in := await(t, p, "blocked by the notice", inState(combine.Blocked))
	if in.Decision.Kind != "question" || in.Decision.Rule != "notice-continue" {
		t.Fatalf("blocked: %+v", in.Decision)
	}
	if pr := p.Prompt(); strings.Join(pr.Answers, " ") != "yes no cancel" || pr.Options || len(pr.Choices) > 0 {
		t.Fatalf("the notice offers %+v, want yes no cancel, no options, no choices", pr)
	}
	for _, choice := range []string{"1", "always", "accept-edits"} {
		keys, err := p.Answer(choice)
		if !errors.Is(err, ErrNoAnswer) || keys != "" || !strings.HasSuffix(err.Error(), "it knows yes, no, cancel") {
			t.Fatalf("answer %s to the notice: keys %q, %v", choice, keys, err)
		}
	}
	if keys, err := p.Answer("yes"); err != nil || keys != "\r" {
		t.Fatalf("answer yes to the notice: %q %v", keys, err)
	}
	// Enter was the first key it read: the refused answers typed nothing.
	awaitScreen(t, p, "typed:[]")
}

// The auto-mode notice that offers shift+Tab takes it as its own choice,
// accept-edits: offered with its label while the notice is up, named in
// the refusal of an answer it does not take, and typed as the rule
// declares it. At 80 columns the notice's footer wraps before "· Esc to
// cancel": the rule reads it wrapped.
func TestAnswerTypesARulesOwnChoice(t *testing.T) {
	t.Parallel()
	p := startScript(t, `printf '%s\r\n  Auto mode can'"'"'t check actions in this session\r\n\r\n  Enter to stay in auto mode · shift+Tab to leave for accept edits mode and stop · Esc to cancel\r\n' ────────────────────; `+
		`stty raw -echo; printf 'typed:[%s]\r\n' "$(head -c 3 | od -An -c | tr -s ' ')"; sleep 30`)
	in := await(t, p, "blocked by the notice", inState(combine.Blocked))
	if in.Decision.Kind != "question" || in.Decision.Rule != "notice" {
		t.Fatalf("blocked: %+v", in.Decision)
	}
	pr := p.Prompt()
	if pr.Rule != "notice" || strings.Join(pr.Answers, " ") != "yes no cancel" || pr.Options ||
		len(pr.Choices) != 1 || pr.Choices[0].Name != "accept-edits" || pr.Choices[0].Label == "" {
		t.Fatalf("the notice offers %+v, want yes no cancel and accept-edits with its label", pr)
	}
	keys, err := p.Answer("accept")
	if !errors.Is(err, ErrNoAnswer) || keys != "" || !strings.Contains(err.Error(), "it knows yes, no, cancel, accept-edits ("+pr.Choices[0].Label+")") {
		t.Fatalf("answer accept: keys %q, %v; want refused, naming accept-edits", keys, err)
	}
	if keys, err := p.AnswerPrompt("accept-edits"); err != nil || keys != "\x1b[Z" {
		t.Fatalf("answer accept-edits: %q %v", keys, err)
	}
	awaitScreen(t, p, "typed:[ 033 [ Z]")
}
