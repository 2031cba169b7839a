package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const casts = "../../testdata/casts"

// run runs a command line with a private config folder.
func run(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, IO{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
	return out.String(), errb.String(), code
}

func isolate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("CORRAL_SOCKET", filepath.Join(dir, "no-daemon.sock"))
	return filepath.Join(dir, "corral", "rules")
}

func TestReplayJSON(t *testing.T) {
	isolate(t)
	out, errs, code := run(t, "", "replay", "--json", filepath.Join(casts, "claude-code/claude-code-deny-110x34.screen.cast"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var changes []map[string]any
	if err := json.Unmarshal([]byte(out), &changes); err != nil {
		t.Fatalf("not one JSON array: %v\n%s", err, out)
	}
	var states []string
	for _, obj := range changes {
		for _, key := range []string{"t", "state", "kind", "source", "rule", "message"} {
			if _, ok := obj[key]; !ok {
				t.Fatalf("change %v lacks %q", obj, key)
			}
		}
		states = append(states, obj["state"].(string)+"/"+obj["kind"].(string)+"/"+obj["rule"].(string))
	}
	// Screen rules alone, the deny scenario: two prompts, one refused with Esc.
	want := "working//working blocked/permission/permission idle//idle working//working blocked/permission/permission working//working idle//idle working//working idle//idle working//working idle//idle"
	if got := strings.Join(states, " "); got != want {
		t.Fatalf("timeline:\n got %s\nwant %s", got, want)
	}
}

func TestReplayTextAndFlagsAfterFile(t *testing.T) {
	isolate(t)
	out, _, code := run(t, "", "replay", filepath.Join(casts, "claude-code/claude-code-100x30.cast"), "--agent", "claude-code")
	if code != 0 || !strings.Contains(out, "blocked  permission  osc7501") || !strings.Contains(out, "approve Update: /tmp/rig/work/notes.txt") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestReplayRawFromStdin(t *testing.T) {
	isolate(t)
	data, err := os.ReadFile(filepath.Join(casts, "codex/session.raw"))
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code := run(t, string(data[:21123]), "replay", "--screen-only", "--json", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var changes []replayChange
	if err := json.Unmarshal([]byte(out), &changes); err != nil || len(changes) == 0 {
		t.Fatalf("%v\n%s", err, out)
	}
	if last := changes[len(changes)-1]; last.State != "blocked" || last.Rule != "approval" {
		t.Fatalf("last change %+v", last)
	}
}

func TestReplayErrors(t *testing.T) {
	isolate(t)
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"replay"}, 2, "need one recording"},
		{[]string{"replay", "--agent", "nope", filepath.Join(casts, "codex/session.raw")}, 2, "unknown agent \"nope\"; corral rules list"},
		{[]string{"replay", "/does/not/exist.cast"}, 1, "open recording"},
		{[]string{"replay", "--size", "abc", "x"}, 2, "COLSxROWS"},
		{[]string{"replay", "--size", "5000x20", "x"}, 2, "must each be from 2 to 1000"},
		{[]string{"replay", "--size", "1x20", "x"}, 2, "must each be from 2 to 1000"},
		{[]string{"replay", "--bogus", "x"}, 2, "unknown flag --bogus"},
		{[]string{"frobnicate"}, 2, "unknown command"},
	}
	for _, tt := range tests {
		_, errs, code := run(t, "", tt.args...)
		if code != tt.code || !strings.Contains(errs, tt.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, errs, tt.code, tt.msg)
		}
	}
	// A cast with garbage lines is read; the garbage is counted.
	bad := filepath.Join(t.TempDir(), "bad.cast")
	os.WriteFile(bad, []byte("{\"version\": 2, \"width\": 20, \"height\": 4}\n[0.1, \"o\", \"hi\"]\nnot json\n[0.2, \"o\"\n"), 0o600)
	_, errs, code := run(t, "", "replay", bad)
	if code != 0 || !strings.Contains(errs, "skipped 2 malformed") {
		t.Errorf("garbage cast: exit %d, %q", code, errs)
	}
	os.WriteFile(bad, []byte("{\"version\": 1, \"width\": 20, \"height\": 4}\n"), 0o600)
	if _, errs, code := run(t, "", "replay", bad); code != 1 || !strings.Contains(errs, "only asciicast v2") {
		t.Errorf("v1 cast: exit %d, %q", code, errs)
	}
}

func TestExplain(t *testing.T) {
	isolate(t)
	screen := "Setting up\n" + strings.Repeat("─", 30) + "\nDo you want to continue? [Y/n] \n"
	out, _, code := run(t, screen, "explain", "-")
	for _, want := range []string{"agent: generic", "1. password → blocked/auth, reads bottom:1: no match", "2. yes_no → blocked/question", "MATCH", "verdict: blocked/question by rule yes_no"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("exit %d, want %q in:\n%s", code, want, out)
		}
	}
	// 16 s into this recording a permission prompt is on screen.
	out, _, code = run(t, "", "explain", "--json", "--at", "16", filepath.Join(casts, "claude-code/claude-code-100x30.screen.cast"))
	var ex explainJSON
	if code != 0 || json.Unmarshal([]byte(out), &ex) != nil || ex.Agent != "claude-code" || ex.RecognisedBy != "screen or title" || len(ex.Rules) != 7 ||
		ex.Verdict.Rule != "permission" || ex.Verdict.Message != "Do you want to make this edit to notes.txt?" || !ex.Rules[0].Matched || ex.Rules[1].Matched {
		t.Fatalf("explain --json: exit %d %+v", code, ex)
	}
}

func TestStatus(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"status", "working", "--progress", "40", "--msg", "uploading"}, "\x1b]7501;state=working:progress=40:msg=" + b64("uploading") + "\x1b\\"},
		{[]string{"status", "blocked", "--kind", "question", "--app", "terraform", "--id", "deploy/us-east"}, "\x1b]7501;state=blocked:kind=question:app=terraform:id=deploy/us-east\x1b\\"},
		{[]string{"status", "clear"}, "\x1b]7501;state=clear\x1b\\"},
		{[]string{"status", "clear", "--id", "deploy"}, "\x1b]7501;state=clear:id=deploy\x1b\\"},
		{[]string{"status", "done", "--title", "build"}, "\x1b]7501;state=done:title=" + b64("build") + "\x1b\\"},
	}
	for _, tt := range tests {
		out, errs, code := run(t, "", tt.args...)
		if code != 0 || out != tt.want {
			t.Errorf("%v: exit %d %q, out %q, want %q", tt.args, code, errs, out, tt.want)
		}
	}
	bad := []struct {
		args []string
		msg  string
	}{
		{[]string{"status"}, "need one state"},
		{[]string{"status", "sleeping"}, "unknown state"},
		{[]string{"status", "working", "--kind", "question"}, "--kind goes with blocked"},
		{[]string{"status", "blocked", "--kind", "coffee"}, "unknown kind"},
		{[]string{"status", "working", "--progress", "150"}, "not 0-100"},
		{[]string{"status", "done", "--progress", "5"}, "working or blocked only"},
		{[]string{"status", "idle", "--id", "a//b"}, "segment"},
		{[]string{"status", "idle", "--app", "has space"}, "app"},
		{[]string{"status", "idle", "--msg", "two\nlines"}, "control character"},
		{[]string{"status", "clear", "--msg", "x"}, "clear takes only --id"},
	}
	for _, tt := range bad {
		out, errs, code := run(t, "", tt.args...)
		if code != 2 || out != "" || !strings.Contains(errs, tt.msg) {
			t.Errorf("%v: exit %d, out %q, stderr %q; want 2 and %q", tt.args, code, out, errs, tt.msg)
		}
	}
}

func TestRulesCheckAndList(t *testing.T) {
	userDir := isolate(t)
	out, _, code := run(t, "", "rules", "check")
	if code != 0 || strings.Count(out, "ok ") != 8 {
		t.Fatalf("built-in check: exit %d\n%s", code, out)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "good.toml"), []byte("name = \"good\"\n[[rule]]\nid = \"a\"\nstate = \"idle\"\npattern = 'x'\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "bad.toml"), []byte("name = \"bad\"\n[[rule]]\nid = \"a\"\nstate = \"idle\"\npattern = '(x'\nfoo = 1\n"), 0o600)
	out, errs, code := run(t, "", "rules", "check", dir)
	if code != 1 || !strings.Contains(out, "ok      good") || !strings.Contains(out, "bad.toml:6:1: unknown key \"rule.foo\"") || !strings.Contains(errs, "1 problem") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}

	// An override in the user folder is listed with its source; a broken
	// one is warned about and the built-in stays.
	os.MkdirAll(userDir, 0o700)
	os.WriteFile(filepath.Join(userDir, "codex.toml"), []byte("name = \"codex\"\n[[rule]]\nid = \"a\"\nstate = \"idle\"\npattern = 'x'\n"), 0o600)
	os.WriteFile(filepath.Join(userDir, "gemini.toml"), []byte("name = \"gemini\"\n[[rule]]\nid = \"a\"\nstate = \"idle\"\npatern = 'x'\n"), 0o600)
	out, errs, code = run(t, "", "rules", "list")
	if code != 0 || !strings.Contains(out, filepath.Join(userDir, "codex.toml")) || !strings.Contains(out, "embedded:gemini.toml") ||
		!strings.Contains(out, "BROKEN  "+filepath.Join(userDir, "gemini.toml")+":5:1") || !strings.Contains(out, "the built-in version is in force") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

func TestHelp(t *testing.T) {
	out, _, code := run(t, "", "help")
	if code != 0 || !strings.Contains(out, "replay") || !strings.Contains(out, "status") {
		t.Fatalf("help: %d %s", code, out)
	}
	if _, errs, code := run(t, ""); code != 2 || !strings.Contains(errs, "usage: corral") {
		t.Fatalf("no args: %d %s", code, errs)
	}
}
