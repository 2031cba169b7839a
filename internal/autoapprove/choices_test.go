package autoapprove

import (
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/approval"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/proctest"
	"github.com/corral-dev/corral/internal/rules"
)

// A prompt whose rule declares choices of its own (here one that allows
// for the whole session) is still answered by a policy with the built-in
// answers alone: a rule's allow types yes's keys, its deny no's, and no
// decision ever picks a declared choice.
func TestPolicyNeverPicksADeclaredChoice(t *testing.T) {
	m, err := rules.Parse("x.toml", []byte("name = \"x\"\n[answers]\nyes = \"y\"\nno = \"n\"\n"+
		"[[rule]]\nid = \"permission\"\nstate = \"blocked\"\nkind = \"permission\"\npattern = 'Allow'\n"+
		"choices = [{ name = \"allow-session\", keys = \"s\", label = \"allow for the session\" }]\n"))
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, c := range m.ChoicesFor("permission") {
		declared[c.Name], declared[c.Keys] = true, true
	}
	for _, c := range []struct {
		name, msg, keys string
	}{
		{"allowed", "approve Bash: ls -la /tmp", "y"},
		{"denied", "approve Bash: rm -rf /w", "n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, f, _ := newTest(t)
			f.info.Decision.State = "working" // held for the policy
			shown := time.Now()
			f.held = &pane.HeldPrompt{Region: c.msg[len("approve Bash: "):], Shown: shown}
			f.report(c.msg)
			a.Held(f, shown)
			if !proctest.WaitFor(2*time.Second, func() bool { return len(f.typed()) > 0 }) {
				t.Fatal("no answer typed")
			}
			got := f.typed()
			keys, ok := m.KeysFor("permission", got[0])
			if len(got) != 1 || !ok || keys != c.keys || declared[got[0]] || declared[keys] {
				t.Fatalf("typed %q (keys %q), want the built-in answer whose keys are %q", got, keys, c.keys)
			}
		})
	}
	// Whatever a policy decides, its answer is a built-in one.
	for _, d := range []string{"allow", "deny", "person", "ask", ""} {
		switch got := approval.AnswerChoice(api.Approval{Decision: d}); got {
		case rules.AnswerYes, rules.AnswerNo:
		default:
			t.Errorf("decision %q answers %q, want yes or no", d, got)
		}
	}
}
