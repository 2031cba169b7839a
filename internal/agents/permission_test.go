package agents

import (
	"fmt"
	"strings"
	"testing"
)

func TestParsePermission(t *testing.T) {
	long := strings.Repeat("x", 5000)
	for _, c := range []struct {
		name, payload string
		ok            bool
		want          Permission
	}{
		{"bash", `{"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls -la /tmp","description":"d"}}`, true,
			Permission{Tool: "Bash", Input: "ls -la /tmp", Whole: true, InputKey: "command", Fields: map[string]string{"command": "ls -la /tmp", "description": "d"}}},
		{"long command is never clipped", `{"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"` + long + `"}}`, true,
			Permission{Tool: "Bash", Input: long, Whole: true, InputKey: "command", Fields: map[string]string{"command": long}}},
		{"write", `{"hook_event_name":"PermissionRequest","tool_name":"Write","tool_input":{"file_path":"/w/a.txt","content":"hi"}}`, true,
			Permission{Tool: "Write", Input: "/w/a.txt", Whole: true, InputKey: "file_path", Fields: map[string]string{"file_path": "/w/a.txt", "content": "hi"}}},
		{"other input is its JSON", `{"hook_event_name":"PermissionRequest","tool_name":"mcp__x","tool_input":{"b": 1, "a": "z"}}`, true,
			Permission{Tool: "mcp__x", Input: `{"b":1,"a":"z"}`, Whole: true, Fields: map[string]string{"a": "z", "b": "1"}}},
		// Every field is kept for a policy to check, not only the one
		// that is the input: where an MCP tool writes is in owner, repo
		// and branch. Anything but a string is its compact JSON.
		{"every field", `{"hook_event_name":"PermissionRequest","tool_name":"mcp__github__create_or_update_file","tool_input":{"owner":"x","repo":"y","branch":"main","path":"docs/x.md","content":"…","opts":{"a": [1, true]},"n":null}}`, true,
			Permission{Tool: "mcp__github__create_or_update_file", Input: "docs/x.md", Whole: true, InputKey: "path",
				Fields: map[string]string{"owner": "x", "repo": "y", "branch": "main", "path": "docs/x.md", "content": "…", "opts": `{"a":[1,true]}`, "n": "null"}}},
		{"question", `{"hook_event_name":"PermissionRequest","tool_name":"AskUserQuestion","tool_input":{"questions":[{"question":"Which?","options":[{"label":"A"}]}]}}`, true,
			Permission{Tool: "AskUserQuestion", Question: true, Options: []string{"A"}}},
		{"no input", `{"hook_event_name":"PermissionRequest","tool_name":"Bash"}`, true, Permission{Tool: "Bash"}},
		{"input not an object", `{"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":"ls"}`, true, Permission{Tool: "Bash"}},
		{"no tool", `{"hook_event_name":"PermissionRequest","tool_input":{"command":"ls"}}`, true, Permission{}},
		{"another event", `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`, false, Permission{}},
		{"not JSON", `PermissionRequest`, false, Permission{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ParsePermission([]byte(c.payload))
			if ok != c.ok || fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("got %+v %v, want %+v %v", got, ok, c.want, c.ok)
			}
		})
	}
}
