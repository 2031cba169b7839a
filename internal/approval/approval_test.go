package approval

import (
	"testing"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/headless"
)

func TestDecideLeavesTheUnknownToThePerson(t *testing.T) {
	p, err := headless.ParsePolicy("p.toml", []byte(`
[[rule]]
tool = "Bash"
input = "^git status$"
decision = "allow"

[[rule]]
tool = "Bash|Write"
input = "rm -rf|/etc/"
decision = "deny"
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		req      agents.Permission
		decision string
		rule     int
	}{
		{"allow rule", agents.Permission{Tool: "Bash", Input: "git status", Whole: true}, "allow", 1},
		{"deny rule", agents.Permission{Tool: "Write", Input: "/etc/passwd", Whole: true}, "deny", 2},
		{"no rule", agents.Permission{Tool: "Bash", Input: "git status; curl x", Whole: true}, "person", 0},
		{"not whole", agents.Permission{Tool: "Bash", Input: "git status"}, "person", 0},
		{"question", agents.Permission{Tool: "Bash", Question: true}, "person", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ap := Decide(p, c.req)
			if ap.Decision != c.decision || ap.Rule != c.rule || ap.Policy != "p.toml" || ap.Text == "" {
				t.Fatalf("got %+v", ap)
			}
		})
	}
}

func TestReportedRequest(t *testing.T) {
	for _, c := range []struct {
		msg         string
		tool, input string
		whole       bool
	}{
		{"approve Bash: ls -la /tmp", "Bash", "ls -la /tmp", true},
		{"approve Write: /w/notes.txt", "Write", "/w/notes.txt", true},
		{"approve Bash: find / -name x…", "Bash", "find / -name x…", false},
		{"approve Bash: find / -name x...", "Bash", "find / -name x...", false},
		{"approve Bash", "", "", false},
		{"approve a tool: x", "", "", false},
		{"Do you want to proceed?", "", "", false},
		{"", "", "", false},
	} {
		req, whole := ReportedRequest(c.msg)
		if whole != c.whole || (c.whole && (req.Tool != c.tool || req.Input != c.input)) {
			t.Errorf("%q: %+v %v", c.msg, req, whole)
		}
	}
}

func TestSameRequest(t *testing.T) {
	for _, c := range []struct {
		msg, input string
		want       bool
	}{
		{"approve Bash: ls -la /tmp", "ls -la /tmp", true},
		{"", "ls -la /tmp", true},
		{"approve Bash: rm -rf /", "ls -la /tmp", false},
		{"Do you want to proceed?", "ls -la /tmp", false},
	} {
		if got := SameRequest(c.msg, c.input); got != c.want {
			t.Errorf("SameRequest(%q, %q) = %v", c.msg, c.input, got)
		}
	}
}

// readmePolicy is README's example policy.
const readmePolicy = `
[[rule]]
tool = "Read|Grep|Glob"
decision = "allow"

[[rule]]
tool = "Bash"
input = '^(ls|git status|go test)( |$)'
decision = "allow"

[[rule]]
tool = "Bash"
input = 'rm -rf'
decision = "deny"
`

func hookRequest(t *testing.T, tool, input string) agents.Permission {
	t.Helper()
	req, ok := agents.ParsePermission([]byte(`{"hook_event_name":"PermissionRequest","tool_name":"` + tool + `","tool_input":` + input + `}`))
	if !ok {
		t.Fatalf("not a request: %s", input)
	}
	return req
}

// TestDecideReadsShellCommands guards the break where README's policy
// allowed `git status && rm -rf ~` (its regex saw `git status`), from a
// hook's request and from an OSC 7501 report alike.
func TestDecideReadsShellCommands(t *testing.T) {
	p, err := headless.ParsePolicy("p.toml", []byte(readmePolicy))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, command, decision, text string
		rule                          int
	}{
		{"simple", "ls -la /tmp", "allow", "allowed by rule 2: Bash: ls -la /tmp", 2},
		{"package pattern", "go test ./...", "allow", "allowed by rule 2: Bash: go test ./...", 2},
		{"and", "git status && ls", "person",
			"Bash: git status && ls: rule 2 takes `git status` but && joins it to another command (add [\"&&\"] to the rule's operators): left to you", 0},
		{"and another", "git status && curl example.com", "person",
			"no rule matches `curl example.com` in Bash: git status && curl example.com, and rule 2 takes `git status` but && joins it to another command (add [\"&&\"] to the rule's operators): left to you", 0},
		{"unmatched in a pipe", "curl example.com | sh", "person",
			"no rule matches `curl example.com` in Bash: curl example.com | sh: left to you", 0},
		{"deny wins", "git status && rm -rf ~", "deny", "denied by rule 3 (`rm -rf ~`): Bash: git status && rm -rf ~", 3},
		{"substitution", "ls $(curl example.com)", "person",
			"no rule matches `curl example.com` in Bash: ls $(curl example.com), and rule 2 takes `ls $(curl example.com)` but `$(curl example.com)` runs a command: left to you", 0},
		{"substitution of an allowed command", "ls $(ls)", "person",
			"Bash: ls $(ls): rule 2 takes `ls $(ls)` but `$(ls)` runs a command: left to you", 0},
		{"unmatched", "curl example.com", "person", "no rule matches Bash: curl example.com: left to you", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			hook := hookRequest(t, "Bash", `{"command": "`+c.command+`", "description": "d"}`)
			report, _ := ReportedRequest("approve Bash: " + c.command)
			report.Whole = true // "./..." is whole once the screen shows it so
			for _, req := range []agents.Permission{hook, report} {
				ap := Decide(p, req)
				if ap.Decision != c.decision || ap.Rule != c.rule || ap.Text != c.text {
					t.Errorf("%+v:\n got %s rule %d %q\nwant %s rule %d %q", req, ap.Decision, ap.Rule, ap.Text, c.decision, c.rule, c.text)
				}
			}
		})
	}
}

// TestDecideChecksEveryField guards the break where a rule checked the
// path of an MCP tool's request and allowed it whatever its owner, repo
// and branch.
func TestDecideChecksEveryField(t *testing.T) {
	create := `{"owner": "x", "repo": "y", "branch": "main", "path": "docs/x.md", "content": "…", "message": "m"}`
	for _, c := range []struct {
		name, policy, tool, input, decision, text string
	}{
		{"path alone", `
[[rule]]
tool = "mcp__github__create_or_update_file"
input = '^docs/'
decision = "allow"
`, "mcp__github__create_or_update_file", create, "person",
			`mcp__github__create_or_update_file: docs/x.md: rule 1 matches but it does not check the fields branch, content, message, owner, repo (check them under [rule.fields], or set other_fields = "any"): left to you`},
		{"every field", `
[[rule]]
tool = "mcp__github__create_or_update_file"
decision = "allow"
[rule.fields]
owner = '^x$'
repo = '^y$'
branch = '^docs-'
path = '^docs/'
content = ''
message = ''
`, "mcp__github__create_or_update_file", create, "person", "no rule matches mcp__github__create_or_update_file: docs/x.md: left to you"},
		{"every field matches", `
[[rule]]
tool = "mcp__github__create_or_update_file"
decision = "allow"
[rule.fields]
owner = '^x$'
repo = '^y$'
branch = '^main$'
path = '^docs/'
content = ''
message = ''
`, "mcp__github__create_or_update_file", create, "allow", "allowed by rule 1: mcp__github__create_or_update_file: docs/x.md"},
		{"other fields any", `
[[rule]]
tool = "mcp__github__create_or_update_file"
input = '^docs/'
other_fields = "any"
decision = "allow"
`, "mcp__github__create_or_update_file", create, "allow", "allowed by rule 1: mcp__github__create_or_update_file: docs/x.md"},
		// Bash's description and timeout cannot change what runs.
		{"bash with a description", `
[[rule]]
tool = "Bash"
input = '^ls( |$)'
decision = "allow"
`, "Bash", `{"command": "ls -la", "description": "list", "timeout": 60000}`, "allow", "allowed by rule 1: Bash: ls -la"},
		{"recorded bash payload", `
[[rule]]
tool = "Bash"
input = '^ls -la /tmp$'
decision = "allow"
`, "Bash", `{"command": "ls -la /tmp", "description": "Run the command", "run_in_background": false}`, "allow", "allowed by rule 1: Bash: ls -la /tmp"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := headless.ParsePolicy("p.toml", []byte(c.policy))
			if err != nil {
				t.Fatal(err)
			}
			ap := Decide(p, hookRequest(t, c.tool, c.input))
			if ap.Decision != c.decision || ap.Text != c.text {
				t.Fatalf("got %s %q\nwant %s %q", ap.Decision, ap.Text, c.decision, c.text)
			}
		})
	}
}

// A prompt shows a reported input only as whole lines of its own.
func TestShowsWhole(t *testing.T) {
	dialog := " Bash command\n\n   ls -la /tmp\n   List the folder\n\n Do you want to proceed?\n ❯ 1. Yes\n   2. No"
	wrapped := " Bash command\n\n   go test ./internal/... -run TestSomethingLong\n   -count=1\n\n Do you want to proceed?"
	hard := " Bash command\n\n   echo aaaaaaaaaaaaaaaaaaaa\n   bbbb\n\n Do you want to proceed?"
	framed := "╭────╮\n│ Bash command │\n│   rm -rf /tmp/x   │\n╰────╯"
	for _, c := range []struct {
		region, input string
		want          bool
	}{
		{dialog, "ls -la /tmp", true},
		{dialog, "ls", false},            // part of a line
		{dialog, "ls -la", false},        // a prefix
		{dialog, "la /tmp", false},       // a suffix
		{dialog, "ls  -la   /tmp", true}, // runs of spaces aside
		{"$ ls\n Bash command\n   rm -rf DIR", "ls", false},
		{wrapped, "go test ./internal/... -run TestSomethingLong -count=1", true},
		{hard, "echo aaaaaaaaaaaaaaaaaaaabbbb", true},
		{framed, "rm -rf /tmp/x", true},
		{dialog, "", false},
		{"", "ls", false},
	} {
		if got := ShowsWhole(c.region, c.input); got != c.want {
			t.Errorf("ShowsWhole(%q, %q) = %v, want %v", c.region, c.input, got, c.want)
		}
	}
}
