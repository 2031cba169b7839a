package headless

import (
	"strings"
	"testing"
)

// createFile is the attack: an MCP tool whose path a rule checked, while
// owner, repo and branch (where the file is written) went unchecked.
var createFile = Request{Tool: "mcp__github__create_or_update_file", Input: "docs/x.md", InputKey: "path",
	Fields: map[string]string{"owner": "x", "repo": "y", "branch": "main", "path": "docs/x.md", "content": "…", "message": "m"}}

// TestPolicyFields guards the break where a rule matched one field of a
// tool's input and allowed the rest unseen.
func TestPolicyFields(t *testing.T) {
	for _, c := range []struct {
		name, policy string
		req          Request
		want         string
		refused      string // a part of why, when left to the person
	}{
		{"only the path checked", `
[[rule]]
tool = "mcp__github__create_or_update_file"
input = '^docs/'
decision = "allow"
`, createFile, Person, "does not check the fields branch, content, message, owner, repo"},
		{"only the path checked, under fields", `
[[rule]]
tool = "mcp__github__create_or_update_file"
fields = { path = '^docs/' }
decision = "allow"
`, createFile, Person, "does not check the fields branch, content, message, owner, repo"},
		{"every field checked", `
[[rule]]
tool = "mcp__github__create_or_update_file"
decision = "allow"
[rule.fields]
owner = '^x$'
repo = '^y$'
branch = '^main$'
path = '^docs/[^/]+\.md$'
content = ''
message = ''
`, createFile, Allow, ""},
		{"a field that does not match", `
[[rule]]
tool = "mcp__github__create_or_update_file"
decision = "allow"
other_fields = "any"
[rule.fields]
path = '^docs/'
owner = '^corral-dev$'
`, createFile, Person, ""},
		{"the others may be anything", `
[[rule]]
tool = "mcp__github__create_or_update_file"
input = '^docs/'
other_fields = "any"
decision = "allow"
`, createFile, Allow, ""},
		{"a field the request lacks", `
[[rule]]
tool = "mcp__github__create_or_update_file"
other_fields = "any"
decision = "allow"
[rule.fields]
path = '^docs/'
sha = ''
`, createFile, Person, ""},
		{"a deny rule needs no more", `
[[rule]]
tool = "mcp__github__.*"
fields = { branch = '^main$' }
decision = "deny"
`, createFile, Deny, ""},
		{"a rule without input takes it whole", `
[[rule]]
tool = "mcp__github__create_or_update_file"
decision = "allow"
`, createFile, Allow, ""},
		// Bash's description, timeout and background flag are metadata.
		{"bash with metadata", `
[[rule]]
tool = "Bash"
input = '^ls( |$)'
decision = "allow"
`, Request{Tool: "Bash", Input: "ls -la", InputKey: "command",
			Fields: map[string]string{"command": "ls -la", "description": "list", "timeout": "60000", "run_in_background": "false"}}, Allow, ""},
		// A sandbox switch or a working folder changes what runs.
		{"bash with a sandbox switch", `
[[rule]]
tool = "Bash"
input = '^ls( |$)'
decision = "allow"
`, Request{Tool: "Bash", Input: "ls -la", InputKey: "command",
			Fields: map[string]string{"command": "ls -la", "dangerouslyDisableSandbox": "true"}}, Person, "dangerouslyDisableSandbox"},
		{"gemini's folder checked", `
[[rule]]
tool = "run_shell_command"
input = '^ls( |$)'
fields = { dir_path = '^/work(/|$)' }
decision = "allow"
`, Request{Tool: "run_shell_command", Input: "ls -la", InputKey: "command",
			Fields: map[string]string{"command": "ls -la", "description": "d", "dir_path": "/work/src"}}, Allow, ""},
		// The command under fields is read as shell too.
		{"command under fields is shell", `
[[rule]]
tool = "Bash"
fields = { command = '^ls( |$)' }
decision = "allow"
`, Request{Tool: "Bash", Input: "ls -la && rm -rf ~", InputKey: "command",
			Fields: map[string]string{"command": "ls -la && rm -rf ~"}}, Person, ""},
		{"command under fields", `
[[rule]]
tool = "Bash"
fields = { command = '^ls( |$)' }
decision = "allow"
`, Request{Tool: "Bash", Input: "ls -la", InputKey: "command",
			Fields: map[string]string{"command": "ls -la"}}, Allow, ""},
		{"write's content is checked", `
[[rule]]
tool = "Write"
input = '^/work/docs/'
decision = "allow"
`, Request{Tool: "Write", Input: "/work/docs/a.md", InputKey: "file_path",
			Fields: map[string]string{"file_path": "/work/docs/a.md", "content": "x"}}, Person, "content"},
		// With no main field, input sees the whole input as JSON.
		{"input over the JSON", `
[[rule]]
tool = "mcp__x"
input = '^\{"q":"[a-z]+"\}$'
decision = "allow"
`, Request{Tool: "mcp__x", Input: `{"q":"go"}`, Fields: map[string]string{"q": "go"}}, Allow, ""},
		// A reported request (OSC 7501, corral exec) has its input alone.
		{"reported input alone", `
[[rule]]
tool = "Write"
input = '^/work/'
decision = "allow"
`, Request{Tool: "Write", Input: "/work/a"}, Allow, ""},
		{"fields cannot be checked on a report", `
[[rule]]
tool = "Write"
fields = { file_path = '^/work/' }
other_fields = "any"
decision = "allow"
`, Request{Tool: "Write", Input: "/work/a"}, Person, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := mustPolicy(t, c.policy)
			v := p.Explain(c.req)
			if v.Decision != c.want || !strings.Contains(v.Refused, c.refused) {
				t.Fatalf("%s (refused %q, unmatched %q), want %s (%q)", v.Decision, v.Refused, v.Unmatched, c.want, c.refused)
			}
		})
	}
}

// TestPolicyKeyErrors: new keys are checked when the policy loads, and
// each error names the file and rule and says what to do.
func TestPolicyKeyErrors(t *testing.T) {
	for src, want := range map[string]string{
		"[[rule]]\ntool = 'x'\ndecision = 'allow'\n[[rule]]\ntool = 'x'\ndecision = 'allow'\n[[rule]]\ntool = 'x'\ndecision = 'allow'\nfields = { path = '(' }\n": `policy p.toml: rule 3: fields.path: bad regex "(": error parsing regexp: missing closing ): ` + "`(`: fix it",
		"[[rule]]\ninput = '('\ndecision = 'allow'\n":                                                      "rule 1: input: bad regex",
		"[[rule]]\ninput = 'x'\nother_fields = 'all'\ndecision = 'allow'\n":                                `rule 1: other_fields "all" must be "any"`,
		"[[rule]]\ninput = 'x'\nrunners = 'yes'\ndecision = 'allow'\n":                                     `rule 1: runners "yes" must be "allow"`,
		"[[rule]]\ninput = 'x'\noperators = ['&']\ndecision = 'allow'\n":                                   `rule 1: operators: "&" is not one of [";", "&&", "||", "|"]`,
		"[[rule]]\ninput = 'x'\noperators = ['&&']\ndecision = 'deny'\n":                                   "rule 1: other_fields, operators and runners widen an allow rule",
		"[[rule]]\ntool = 'Bash'\noperators = ['&&']\ndecision = 'allow'\n":                                "rule 1: other_fields, operators and runners widen a rule that checks input or fields",
		"[[rule]]\ntool = 'Bash'\nother_fields = 'any'\ndecision = 'allow'\n":                              "rule 1: other_fields, operators and runners widen a rule that checks input or fields",
		"[[rule]]\ninput = 'x'\nfields = { path = 1 }\ndecision = 'allow'\n":                               "p.toml:3",
		"[[rule]]\ninput = 'x'\noperator = ['&&']\ndecision = 'allow'\n":                                   "unknown key",
		"[[rule]]\ninput = 'x'\nfields = { '' = 'x' }\ndecision = 'allow'\n":                               "rule 1: fields: a field with no name",
		"[[rule]]\ninput = 'x'\noperators = ['&&', '|', ';', '||']\ndecision = 'allow'\n":                  "",
		"[[rule]]\ntool = 'x'\ndecision = 'allow'\n[rule.fields]\npath = '^docs/'\nother_fields = 'any'\n": "rule 1: fields.other_fields: other_fields is a key of the rule, not a field: put it above [rule.fields]",
		"[[rule]]\ntool = 'x'\n[rule.fields]\npath = '^docs/'\ndecision = 'allow'\n":                       "rule 1: fields.decision: decision is a key of the rule",
	} {
		_, err := ParsePolicy("p.toml", []byte(src))
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", src, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
}

// TestPolicyRulesDescribeNewKeys: explain shows what each rule checks.
func TestPolicyRulesDescribeNewKeys(t *testing.T) {
	p := mustPolicy(t, `
[[rule]]
tool = "Bash"
input = '^go '
operators = ["&&", "|"]
runners = "allow"
decision = "allow"

[[rule]]
tool = "mcp__x"
other_fields = "any"
decision = "allow"
[rule.fields]
path = '^docs/'
branch = '^main$'
`)
	got := strings.Join(p.Rules(), "\n")
	want := `allow tool "Bash" input "^go " operators ["&&", "|"] runners "allow"` + "\n" +
		`allow tool "mcp__x" input "" fields {branch "^main$", path "^docs/"} other_fields "any"`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
