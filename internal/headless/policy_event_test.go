package headless

import (
	"strings"
	"testing"
)

// TestPermissionRequestFields: a relayed can_use_tool request keeps every
// field of its input, unclipped, for DecideRequest.
func TestPermissionRequestFields(t *testing.T) {
	p := mustPolicy(t, `
[[rule]]
tool = "mcp__github__create_or_update_file"
input = '^docs/'
decision = "allow"

[[rule]]
tool = "Bash"
input = '^ls( |$)'
decision = "allow"
`)
	ev := Parse("claude", []byte(`{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"mcp__github__create_or_update_file",`+
		`"input":{"owner":"x","repo":"y","branch":"main","path":"docs/x.md","content":"hi","n":3}}}`))
	req := PermissionRequest(ev)
	if req.Input != "docs/x.md" || req.InputKey != "path" || req.Fields["owner"] != "x" || req.Fields["n"] != "3" || len(req.Fields) != 6 {
		t.Fatalf("%+v", req)
	}
	if allow, why := p.DecideRequest(req); allow || !strings.Contains(why, "does not check the fields branch, content, n, owner, repo") {
		t.Errorf("an unchecked owner, repo and branch: allow=%v %s", allow, why)
	}

	// The event's input is clipped; the request's is whole, so what
	// follows the cut is read.
	long := "ls " + strings.Repeat("a", clipLine) + "; rm -rf ~"
	ev = Parse("claude", []byte(`{"type":"control_request","request_id":"r2","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"`+long+`","description":"d"}}}`))
	if req = PermissionRequest(ev); req.Input != long || !strings.HasSuffix(ev.Input, "…") {
		t.Fatalf("input %q…", req.Input[:20])
	}
	if allow, why := p.DecideRequest(req); allow {
		t.Errorf("a long compound command allowed: %s", why)
	}
	ev = Parse("claude", []byte(`{"type":"control_request","request_id":"r3","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls -la","description":"d","timeout":5}}}`))
	if allow, why := p.DecideRequest(PermissionRequest(ev)); !allow {
		t.Errorf("ls with metadata: %s", why)
	}
}
