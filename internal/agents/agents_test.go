package agents

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/combine"
)

func TestParseHook(t *testing.T) {
	tests := []struct {
		agent, payload string
		want           Report
	}{
		{"claude-code", `{"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls -la /tmp"}}`,
			Report{Event: "PermissionRequest", State: combine.Blocked, Kind: "permission", Message: "approve Bash: ls -la /tmp"}},
		{"claude-code", `{"hook_event_name":"PermissionRequest","tool_name":"Write","tool_input":{"file_path":"/a/b.txt","content":"x"}}`,
			Report{Event: "PermissionRequest", State: combine.Blocked, Kind: "permission", Message: "approve Write: /a/b.txt"}},
		{"claude-code", `{"hook_event_name":"Notification","notification_type":"permission_prompt","message":"Claude needs your permission to use Bash"}`,
			Report{Event: "Notification", Reminder: true, State: combine.Blocked, Kind: "permission", Message: "Claude needs your permission to use Bash"}},
		{"claude-code", `{"hook_event_name":"Notification","notification_type":"idle_prompt","message":"waiting"}`, Report{Event: "Notification", Reminder: true, Ignore: true, Why: "notification idle_prompt"}},
		{"claude-code", `{"hook_event_name":"Notification","notification_type":"agent_needs_input","message":"Auto mode can't check actions in this session and needs your choice"}`,
			Report{Event: "Notification", Reminder: true, State: combine.Blocked, Kind: "question", Message: "Auto mode can't check actions in this session and needs your choice"}},
		{"claude-code", `{"hook_event_name":"UserPromptSubmit","prompt":"hi"}`, Report{Event: "UserPromptSubmit", State: combine.Working}},
		{"claude-code", `{"hook_event_name":"Stop","last_assistant_message":"ok"}`, Report{Event: "Stop", State: combine.Done}},
		{"claude-code", `{"hook_event_name":"Stop","background_tasks":[{"id":"b1","command":"npm run dev"}]}`, Report{Event: "Stop", State: combine.Done, Message: "done; 1 background task still running"}},
		{"claude-code", `{"hook_event_name":"Stop","background_tasks":2}`, Report{Event: "Stop", State: combine.Done, Message: "done; 2 background tasks still running"}},
		{"claude-code", `{"hook_event_name":"Stop","background_tasks":"x"}`, Report{Event: "Stop", State: combine.Done}},
		{"claude-code", `{"hook_event_name":"SubagentStop"}`, Report{Event: "SubagentStop", Ignore: true, Why: "event SubagentStop"}},
		{"claude-code", `{"hook_event_name":"StopFailure","error":"rate_limit"}`, Report{Event: "StopFailure", State: combine.Error, Message: "rate_limit"}},
		{"claude-code", `{"hook_event_name":"SessionEnd","reason":"exit"}`, Report{Event: "SessionEnd", Clear: true}},
		{"codex", `{"type":"agent-turn-complete","thread-id":"t","last-assistant-message":"done"}`, Report{Event: "agent-turn-complete", State: combine.Done}},
		{"codex", `{"type":"agent-turn-complete","thread-id":"t2","input-messages":["Generate a concise, single-line task title for this conversation:\nfix it"]}`,
			Report{Event: "agent-turn-complete", Ignore: true, Why: "the agent's own hidden request", Hidden: true}},
		{"codex", `{"type":"agent-turn-complete","thread-id":"t","input-messages":["fix the tests", 7]}`, Report{Event: "agent-turn-complete", State: combine.Done}},
		{"claude-code", `{"hook_event_name":"PermissionRequest","session_id":"s1","tool_name":"AskUserQuestion","tool_input":{"questions":[{"question":"Which colour?","options":[{"label":"Red"},{"label":"Blue"}]}]}}`,
			Report{Event: "PermissionRequest", Session: "s1", State: combine.Blocked, Kind: "question", Message: "Which colour? (Red / Blue)"}},
		{"claude-code", `{"hook_event_name":"SessionStart","session_id":"s2","source":"clear"}`,
			Report{Event: "SessionStart", Session: "s2", NewSession: true, State: combine.Idle}},
		// Fields of an unexpected shape read as absent.
		{"claude-code", `{"hook_event_name":"PermissionRequest","session_id":5,"tool_name":["x"],"tool_input":"rm -rf /"}`,
			Report{Event: "PermissionRequest", State: combine.Blocked, Kind: "permission", Message: `approve a tool: "rm -rf /"`}},
		{"claude-code", `{"hook_event_name":{"a":1}}`, Report{Ignore: true, Why: "no event name"}},
		{"gemini", `{"hook_event_name":"Notification","notification_type":"ToolPermission","message":"Allow shell?"}`,
			Report{Event: "Notification", Reminder: true, State: combine.Blocked, Kind: "permission", Message: "Allow shell?"}},
	}
	for _, tt := range tests {
		got, err := ParseHook(tt.agent, []byte(tt.payload))
		if err != nil || got != tt.want {
			t.Errorf("ParseHook(%s, %s) = %+v, %v; want %+v", tt.agent, tt.payload, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "not json", `{"hook_event_name":`, "null", "[1,2]", `"Stop"`, strings.Repeat("x", MaxPayload+1)} {
		if _, err := ParseHook("claude-code", []byte(bad)); err == nil {
			t.Errorf("ParseHook accepted %.20q", bad)
		}
	}
}

func TestIntegrate(t *testing.T) {
	argv, agent := Integrate([]string{"claude", "--permission-mode", "default"}, []string{"/opt/my corral/corral", "hook"})
	if agent != "claude-code" || argv[0] != "claude" || argv[1] != "--settings" || argv[3] != "--permission-mode" {
		t.Fatalf("claude: %q %s", argv, agent)
	}
	var settings struct {
		Hooks map[string][]struct {
			Hooks []struct{ Type, Command string }
		}
	}
	if err := json.Unmarshal([]byte(argv[2]), &settings); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{"PermissionRequest", "Notification", "UserPromptSubmit", "Stop", "StopFailure", "SessionEnd"} {
		h := settings.Hooks[ev]
		if len(h) != 1 || h[0].Hooks[0].Command != `'/opt/my corral/corral' 'hook' '--agent' 'claude-code'` {
			t.Fatalf("%s hook: %+v", ev, h)
		}
	}
	argv, agent = Integrate([]string{"/usr/bin/codex", "exec", "hi"}, []string{"/bin/corral", "hook"})
	if agent != "codex" || strings.Join(argv, " ") != `/usr/bin/codex -c notify=["/bin/corral","hook","--agent","codex"] exec hi` {
		t.Fatalf("codex: %q", argv)
	}
	if argv, agent := Integrate([]string{"bash"}, nil); agent != "" || len(argv) != 1 {
		t.Fatalf("bash: %q %s", argv, agent)
	}
}

func FuzzParseHook(f *testing.F) {
	f.Add([]byte(`{"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls"}}`))
	f.Add([]byte(`{"type":"agent-turn-complete"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseHook("claude-code", b)
		if err == nil && len(r.Message) > 1000 {
			t.Fatalf("message of %d bytes", len(r.Message))
		}
	})
}
