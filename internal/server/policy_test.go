package server

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
		req, whole := reportedRequest(c.msg)
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
		if got := sameRequest(c.msg, c.input); got != c.want {
			t.Errorf("sameRequest(%q, %q) = %v", c.msg, c.input, got)
		}
	}
}
