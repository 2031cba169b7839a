package headless

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestResultReason(t *testing.T) {
	for _, c := range []struct {
		ev   Event
		want string
	}{
		{Event{Subtype: "success", Text: "API Error: 400 bad request"}, "the result is an error: API Error: 400 bad request"},
		{Event{Subtype: "error_max_turns"}, "the result is an error: error_max_turns"},
		{Event{Subtype: "turn.failed", Text: "refused"}, "the result is an error: turn.failed: refused"},
		{Event{}, "the result is an error"},
	} {
		if got := ResultReason(&c.ev); got != c.want {
			t.Errorf("ResultReason(%+v) = %q, want %q", c.ev, got, c.want)
		}
	}
}

// A line corral has no use for still says what it was.
func TestOtherEventsSayWhatTheyWere(t *testing.T) {
	for _, c := range []struct{ agent, line, subtype string }{
		{"claude", `{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"}}`, "rate_limit_event"},
		{"claude", `{"type":"system","subtype":"hook_response","session_id":"s"}`, "system/hook_response"},
		{"codex", `{"type":"turn.started"}`, "turn.started"},
	} {
		ev := Parse(c.agent, []byte(c.line))
		if ev.Type != EventOther || ev.Subtype != c.subtype || !strings.Contains(ev.Line, `"type"`) {
			t.Errorf("%s %s: %+v", c.agent, c.line, ev)
		}
	}
}

// A denial says "allow": false, and a result its tool calls even when none.
func TestEventJSONShape(t *testing.T) {
	b, _ := json.Marshal(Event{Type: EventDecision, RequestID: "r1", By: "policy rule 2"})
	if !strings.Contains(string(b), `"allow":false`) || strings.Count(string(b), `"allow"`) != 1 {
		t.Errorf("a denial: %s", b)
	}
	b, _ = json.Marshal(Event{Type: EventResult, Duration: 1200})
	if !strings.Contains(string(b), `"tool_calls":0`) || !strings.Contains(string(b), `"duration_ms":1200`) {
		t.Errorf("a result: %s", b)
	}
	b, _ = json.Marshal(Event{Type: EventText, Text: "hi"})
	if strings.Contains(string(b), "allow") || strings.Contains(string(b), "tool_calls") {
		t.Errorf("a text: %s", b)
	}
}
