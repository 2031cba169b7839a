package headless

import "testing"

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
