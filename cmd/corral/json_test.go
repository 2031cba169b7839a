package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// Every --json prints one JSON value: an object or an array.
func TestJSONShapesAndStatesAfterActions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must("run", "--name", "sleeper", "--", "sleep", "60")
	e.must("run", "--name", "quick", "--", "sh", "-c", "exit 3")
	e.must("wait", "quick", "--state", "exited", "--timeout", "10s")

	// wait on timeout says which pane is in which state, and --json
	// prints them as they are.
	out, errs, code := e.run("wait", "sleeper", "quick", "--state", "done,exited", "--timeout", "300ms", "--json")
	if code != 124 || !strings.Contains(errs, "timed out after 300ms waiting for done,exited: sleeper is ") || strings.Contains(errs, "quick is") {
		t.Fatalf("wait timeout: exit %d %q", code, errs)
	}
	var panes []paneJSON
	if err := json.Unmarshal([]byte(out), &panes); err != nil || len(panes) != 2 || panes[0].Name != "sleeper" || panes[1].State != "exited" {
		t.Fatalf("wait --json on timeout: %v %s", err, out)
	}
	// A pane that exited can reach no other state: wait says so at once
	// rather than run out its timeout.
	out, errs, code = e.run("wait", "sleeper", "quick", "--state", "idle", "--timeout", "60s", "--json")
	if code != 4 || !strings.Contains(errs, "quick is exited (3), and an exited pane stays exited") {
		t.Fatalf("wait on an exited pane: exit %d %q", code, errs)
	}
	if err := json.Unmarshal([]byte(out), &panes); err != nil || len(panes) != 2 {
		t.Fatalf("wait --json on an exited pane: %v %s", err, out)
	}
	e.must("run", "--name", "short", "--", "sh", "-c", "sleep 0.3; exit 5")
	if _, errs, code := e.run("wait", "short", "--state", "blocked", "--timeout", "60s"); code != 4 || !strings.Contains(errs, "short is exited (5)") {
		t.Fatalf("wait on a pane that exits while waited on: exit %d %q", code, errs)
	}

	// kill --json: the pane after the kill.
	var killed paneJSON
	if err := json.Unmarshal([]byte(e.must("kill", "sleeper", "--json")), &killed); err != nil ||
		killed.State != "exited" || killed.ExitCode == nil || *killed.ExitCode != 143 {
		t.Fatalf("kill --json: %v %+v", err, killed)
	}

	cast, err := filepath.Abs("../../testdata/casts/claude-code/claude-code-100x30.cast")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"ls", "--json"},
		{"rm", "nope", "--json"},
		{"rm", "quick", "--json"},
		{"version", "--json"},
		{"rules", "list", "--json"},
		{"rules", "check", "--json"},
		{"replay", "--json", cast},
		{"explain", "--json", cast},
	} {
		out, errs, _ := e.run(args...)
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Errorf("%v: not one JSON value: %v\n%s\n%s", args, err, out, errs)
			continue
		}
		switch v.(type) {
		case []any, map[string]any:
		default:
			t.Errorf("%v: %T, not an object or an array: %s", args, v, out)
		}
	}
	if out, _, code := e.run("rm", "nope", "--json"); code != 1 || strings.TrimSpace(out) != "[]" {
		t.Errorf("rm of nothing: exit %d %q", code, out)
	}
}
