package cli

import (
	"bytes"
	"testing"

	"github.com/corral-dev/corral/internal/headless"
)

// The readable view of a job: streamed text on one line, no line for
// events corral does not use.
func TestExecReadableView(t *testing.T) {
	var b bytes.Buffer
	v := &readable{w: &b}
	for _, ev := range []headless.Event{
		{Type: headless.EventInit, SessionID: "s1"},
		{Type: headless.EventOther},
		{Type: headless.EventText, Delta: true},
		{Type: headless.EventText, Text: "Hello ", Delta: true},
		{Type: headless.EventText, Text: "there.", Delta: true},
		{Type: headless.EventOther},
		{Type: headless.EventToolUse, Tool: "shell", Input: "ls"},
		{Type: headless.EventText, Text: "Done.", Delta: true},
	} {
		v.show(ev)
	}
	v.end()
	want := "session s1\nassistant: Hello there.\ntool shell: ls\nassistant: Done.\n"
	if b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
}

// A plain program's lines are printed as they came, until an event says
// the output is an agent's after all.
func TestExecReadablePlain(t *testing.T) {
	for _, tt := range []struct {
		name  string
		plain bool
		want  string
	}{
		{"no agent named", true, "hello\n  two spaces\nsession s1\n(not an event) after\n"},
		{"an agent named", false, "(not an event) hello\n(not an event)   two spaces\nsession s1\n(not an event) after\n"},
	} {
		var b bytes.Buffer
		v := &readable{w: &b, plain: tt.plain}
		for _, ev := range []headless.Event{
			{Type: headless.EventDiagnostic, Line: "hello"},
			{Type: headless.EventDiagnostic, Line: "  two spaces"},
			{Type: headless.EventInit, SessionID: "s1"},
			{Type: headless.EventDiagnostic, Line: "after"},
		} {
			v.show(ev)
		}
		v.end()
		if b.String() != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, b.String(), tt.want)
		}
	}
}

func TestStderrTail(t *testing.T) {
	in := "Warning: one\n\nError: two\n    at f (x.js:1:2)\n    at g (x.js:3:4)\nthree\n"
	if got, want := stderrTail(in, 2), "  Error: two\n  three"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
