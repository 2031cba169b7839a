package server

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/corral-dev/corral/internal/pane"
)

// A job's entry answers what a pane's does in the job's own way: its
// screen is its readable lines (unstyled, no escapes), typing is refused
// and says why, its answer is the job's, and its integration is its
// stream's.
func TestJobEntry(t *testing.T) {
	script := `echo '{"type":"init","session_id":"g-1","model":"m"}'
echo '{"type":"message","role":"assistant","content":"Hello there."}'
echo '{"type":"result","status":"success","stats":{}}'`
	for _, tc := range []struct {
		name   string
		prompt string // a prompt keeps stdin open for the permission relay
		want   string // in the refusal of typing
	}{
		{"without a relay", "", ErrNoInput.Error()},
		{"with a relay", "hi", "answer its permission requests with corral answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := startJob("jt", "view", headless.Options{Agent: "gemini", Argv: []string{"sh", "-c", script}, Prompt: tc.prompt}, func(detect.Change) {}, nil)
			select {
			case <-j.Done():
			case <-time.After(10 * time.Second):
				j.Close(0)
				t.Fatal("the job did not end")
			}
			e := &entry{p: j, name: "view"}
			if _, ok := e.asPane(); ok {
				t.Fatal("a job's entry says it is a pane")
			}
			if got, ok := e.asJob(); !ok || got != j {
				t.Fatal("a job's entry does not give its job")
			}
			// Its report is its stream: the integration is its agent's.
			p := paneJSON(e)
			if p.Backend != "headless" || p.SessionID != "g-1" || p.Integration != "gemini" || p.IntegrationError != "" || p.State != "done" {
				t.Fatalf("the job as a pane: %+v", p)
			}
			lines := j.Snapshot().Lines
			if !strings.Contains(strings.Join(lines, "\n"), "assistant: Hello there.") {
				t.Fatalf("screen lines: %q", lines)
			}
			if got, want := e.ansi(), strings.Join(lines, "\r\n"); got != want {
				t.Fatalf("ansi: %q, want %q", got, want)
			}
			rows := e.styledRows()
			if len(rows) != len(lines) {
				t.Fatalf("%d styled rows for %d lines", len(rows), len(lines))
			}
			for i, r := range rows {
				if len(r) != 1 || r[0].Text != lines[i] {
					t.Fatalf("styled row %d: %+v, want the plain line %q", i, r, lines[i])
				}
			}
			err := typeText(e, "hello", true, true)
			if !errors.Is(err, ErrNoInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("typing into a job: %v, want ErrNoInput saying %q", err, tc.want)
			}
			// The job ended: its answer says it is not blocked, and in what
			// state it is.
			if _, err := e.answer("yes"); !errors.Is(err, pane.ErrNotBlocked) || !strings.Contains(err.Error(), "(it is done)") {
				t.Fatalf("answering an ended job: %v", err)
			}
		})
	}
}
