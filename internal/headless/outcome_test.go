package headless

import (
	"strings"
	"testing"
	"time"
)

func TestOutcome(t *testing.T) {
	ok := &Event{Type: EventResult}
	bad := &Event{Type: EventResult, IsError: true, Text: "model overloaded"}
	tests := []struct {
		name   string
		out    Outcome
		end    ending
		state  string
		code   int
		reason string
	}{
		{"a result, exit 0", Outcome{Result: ok}, ending{}, "done", 0, ""},
		{"a result, the agent's own status kept", Outcome{Result: ok, ExitCode: 2}, ending{}, "done", 2, ""},
		{"no result", Outcome{}, ending{}, "error", ExitFailed, "exited without a result event (exit status 0)"},
		{"no result, its status", Outcome{ExitCode: 137}, ending{}, "error", 137, "exit status 137"},
		{"an error result", Outcome{Result: bad}, ending{}, "error", 1, ""},
		{"timeout beats a result", Outcome{Result: ok}, ending{timedOut: true}, "error", ExitTimeout, "timed out after 1s"},
		{"cancelled", Outcome{ExitCode: 137}, ending{cancelled: true}, "error", 137, "cancelled"},
		{"a prompt in pty-lite", Outcome{}, ending{prompted: "asking"}, "error", 1, "asking"},
		{"a plain program, exit 0", Outcome{}, ending{plain: true}, "done", 0, ""},
		{"a plain program, its status", Outcome{ExitCode: 3}, ending{plain: true}, "error", 3, "exit status 3 (a program without an agent stream)"},
		{"a plain program timed out", Outcome{}, ending{plain: true, timedOut: true}, "error", ExitTimeout, "timed out"},
		{"a plain program cancelled", Outcome{ExitCode: 137}, ending{plain: true, cancelled: true}, "error", 137, "cancelled"},
		{"a prompt in pty-lite, killed", Outcome{ExitCode: 137}, ending{prompted: "asking"}, "error", 1, "asking"},
	}
	for _, tt := range tests {
		got := outcome(tt.out, tt.end, time.Second)
		if got.State != tt.state || got.ExitCode != tt.code || !strings.Contains(got.Reason, tt.reason) {
			t.Errorf("%s: %+v; want %s, exit %d, reason with %q", tt.name, got, tt.state, tt.code, tt.reason)
		}
	}
}
