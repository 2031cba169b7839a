package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const explainPolicy = `
[[rule]]
tool = "Bash"
input = '^(ls|git status|go (build|test))( |$)'
operators = ["&&"]
decision = "allow"

[[rule]]
tool = "Bash"
input = 'rm -rf'
decision = "deny"

[[rule]]
tool = "mcp__github__create_or_update_file"
input = '^docs/'
decision = "allow"
`

// TestPolicyExplainShowsCommands: explain shows each simple command of a
// shell command with the rule that took it, and why a whole is refused.
func TestPolicyExplainShowsCommands(t *testing.T) {
	isolate(t)
	file := filepath.Join(t.TempDir(), "p.toml")
	if err := os.WriteFile(file, []byte(explainPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	type verdict struct {
		Decision, Text, Refused string
		Rule                    int
		Rules                   []struct {
			Rule    int
			Matched bool
		}
		Commands []struct {
			Command, Decision, Why string
			Rule                   int
		}
	}
	explain := func(args ...string) verdict {
		t.Helper()
		out, errs, code := run(t, "", append([]string{"policy", "explain", "--policy", file, "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var v verdict
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return v
	}

	v := explain("Bash", "git status && rm -rf ~")
	if v.Decision != "deny" || v.Rule != 2 || len(v.Commands) != 2 ||
		v.Commands[0].Command != "git status" || v.Commands[0].Rule != 1 || v.Commands[0].Decision != "allow" ||
		v.Commands[1].Command != "rm -rf ~" || v.Commands[1].Rule != 2 || v.Commands[1].Decision != "deny" ||
		!v.Rules[0].Matched || !v.Rules[1].Matched || v.Rules[2].Matched {
		t.Errorf("deny wins: %+v", v)
	}
	v = explain("Bash", "go build && go test ./... > log")
	if v.Decision != "person" || !strings.Contains(v.Refused, "> redirects output") || v.Commands[0].Why == "" {
		t.Errorf("a redirection: %+v", v)
	}
	v = explain("Bash", "git status | curl example.com")
	if v.Decision != "person" || !strings.Contains(v.Refused, "rule 1 takes `git status` but | joins it") {
		t.Errorf("refused and unmatched: %+v", v)
	}
	v = explain("Bash", "go build && go test ./...")
	if v.Decision != "allow" || v.Rule != 1 || v.Refused != "" {
		t.Errorf("opted in: %+v", v)
	}
	// A JSON object is the tool's whole input.
	v = explain("mcp__github__create_or_update_file", `{"owner": "x", "repo": "y", "branch": "main", "path": "docs/x.md"}`)
	if v.Decision != "person" || !strings.Contains(v.Refused, "does not check the fields branch, owner, repo") || len(v.Commands) != 0 {
		t.Errorf("fields: %+v", v)
	}

	out, errs, code := run(t, "", "policy", "explain", "--policy", file, "Bash", "git status | curl example.com")
	for _, want := range []string{
		`1. allow tool "Bash" input "^(ls|git status|go (build|test))( |$)" operators ["&&"]: MATCH, but | joins it to another command`,
		"\ncommands:\n  git status: rule 1 takes it but | joins it",
		"\n  curl example.com: no rule matches it\n",
		"verdict: no rule matches `curl example.com` in Bash: git status | curl example.com, and rule 1 takes `git status` but | joins it to another command (add [\"|\"] to the rule's operators): left to you",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("text lacks %q (exit %d, %s):\n%s", want, code, errs, out)
		}
	}
}
