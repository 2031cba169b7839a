package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// What corral prints that it did not write is safe for a terminal: a pane
// named with an OSC 52 / OSC 0 sequence and a message with CSI 2J and a C1
// CSI reach ls, ls --json and the errors as visible escapes, and JSON stays
// JSON that means the same.
func TestPrintedTextIsSafeForATerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	evil := "x\x1b]52;c;ZXZpbA==\x07\x1b]0;pwned\x07"
	e.must("run", "--name", evil, "--", "sh", "-c", `printf 'Delete all? \033[2J\302\2332J [y/n] '; sleep 600`)
	e.must("wait", evil, "--state", "blocked", "--timeout", "10s")
	for _, args := range [][]string{{"ls"}, {"ls", "--json"}, {"wait", evil, "--state", "blocked", "--json"}} {
		out := e.must(args...)
		if strings.ContainsAny(out, "\x1b\x07") || strings.Contains(out, "\u009b") {
			t.Fatalf("corral %v printed raw controls: %q", args, out)
		}
		if args[len(args)-1] == "--json" {
			var ps []struct{ Name string }
			if err := json.Unmarshal([]byte(out), &ps); err != nil || len(ps) != 1 || ps[0].Name != evil {
				t.Fatalf("corral %v: %v %+v", args, err, ps)
			}
		}
	}
	_, errs, code := e.run("send", evil, "y", "--enter")
	if code != 3 || strings.ContainsAny(errs, "\x1b\x07") {
		t.Fatalf("send: exit %d, stderr %q", code, errs)
	}
}
