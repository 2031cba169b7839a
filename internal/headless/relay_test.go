package headless

import (
	"strings"
	"testing"
	"time"
)

func TestClaudeRelayArgv(t *testing.T) {
	t.Parallel()
	argv, prompt, ok := ClaudeRelay([]string{"claude", "-p", "fix the bug", "--output-format", "stream-json", "--verbose"}, "")
	if !ok || prompt != "fix the bug" || strings.Join(argv, " ") != "claude -p --output-format stream-json --verbose --input-format stream-json --permission-prompt-tool stdio" {
		t.Fatalf("%q %q %v", argv, prompt, ok)
	}
	if _, _, ok := ClaudeRelay([]string{"claude", "-p", "--verbose"}, ""); ok {
		t.Fatal("no prompt, yet relayed")
	}
	if _, prompt, ok := ClaudeRelay([]string{"claude", "-p"}, "given"); !ok || prompt != "given" {
		t.Fatal("--prompt not used")
	}
}

func relayRun(t *testing.T, o Options) (Outcome, string) {
	t.Helper()
	o.Prompt = "do it"
	out, evs := run(t, "relay", o)
	var text, decision string
	for _, e := range evs {
		switch e.Type {
		case EventText:
			text = e.Text
		case EventDecision:
			decision = e.By
		}
	}
	if out.State != "done" {
		t.Fatalf("outcome %+v (stderr %q)", out, out.Stderr)
	}
	return out, text + "|" + decision
}

func TestRelayWithPolicy(t *testing.T) {
	t.Parallel()
	allow, err := ParsePolicy("p.toml", []byte("[[rule]]\ntool = 'Read|Grep'\ndecision = 'allow'\n[[rule]]\ntool = 'Bash'\ninput = '^rm -rf build$'\ndecision = 'allow'\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, got := relayRun(t, Options{Policy: allow}); !strings.HasPrefix(got, "allow|p.toml rule 2") {
		t.Fatalf("got %q", got)
	}
	none, _ := ParsePolicy("q.toml", []byte("[[rule]]\ntool = 'Read'\ndecision = 'allow'\n"))
	if _, got := relayRun(t, Options{Policy: none}); got != "deny|q.toml: no rule matched: deny" {
		t.Fatalf("got %q", got)
	}
	if _, got := relayRun(t, Options{}); got != "deny|no policy and nobody to ask" {
		t.Fatalf("got %q", got)
	}
}

func TestRelayAskingAPerson(t *testing.T) {
	t.Parallel()
	var asked Event
	_, got := relayRun(t, Options{OnPermission: func(req Event, answer func(bool, string)) {
		asked = req
		go func() {
			time.Sleep(50 * time.Millisecond) // a person takes a moment
			answer(true, "corral answer")
		}()
	}})
	if got != "allow|corral answer" || asked.Tool != "Bash" || asked.Input != "rm -rf build" || asked.RequestID != "r1" {
		t.Fatalf("got %q, asked %+v", got, asked)
	}
}

func TestPolicyErrors(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"[[rule]]\ntool = 'Bash'\ndecision = 'maybe'\n": "rule 1: decision",
		"[[rule]]\ntool = '('\ndecision = 'allow'\n":    "rule 1: tool",
		"[[rule]]\ntoll = 'Bash'\n":                     "p.toml:2:1: unknown key",
	} {
		if _, err := ParsePolicy("p.toml", []byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
}
