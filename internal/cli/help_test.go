package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// singleDash finds a flag written with one dash, like -json.
var singleDash = regexp.MustCompile(`(^|[\s\[(])-[a-z][a-z-]+`)

func TestHelpPageIsTheSameBothWays(t *testing.T) {
	isolate(t)
	for _, c := range commands {
		if c.group == "" {
			continue
		}
		name := strings.Fields(c.name)
		viaHelp, errs, code := run(t, "", append([]string{"help"}, name...)...)
		if code != 0 {
			t.Errorf("help %s: exit %d: %s", c.name, code, errs)
			continue
		}
		viaFlag, errs, code := run(t, "", append(name, "--help")...)
		if code != 0 || viaFlag != viaHelp {
			t.Errorf("%s --help (exit %d, %s) differs from help %s:\n%s\n---\n%s", c.name, code, errs, c.name, viaFlag, viaHelp)
		}
		for _, want := range []string{"usage: corral " + c.name, "Flags:", "--help", "Example:\n  ", "corral " + c.name} {
			if !strings.Contains(viaHelp, want) {
				t.Errorf("help %s lacks %q:\n%s", c.name, want, viaHelp)
			}
		}
		if m := singleDash.FindString(viaHelp); m != "" {
			t.Errorf("help %s writes a flag with one dash (%q):\n%s", c.name, m, viaHelp)
		}
	}
	// A flag's value and its default.
	out, _, _ := run(t, "", "help", "run")
	for _, want := range []string{"--size COLSxROWS", "(default 120x32)", "--env K=V", "--json  "} {
		if !strings.Contains(out, want) {
			t.Errorf("help run lacks %q:\n%s", want, out)
		}
	}
}

func TestHelpGroupsEverydayCommandsFirst(t *testing.T) {
	out, _, code := run(t, "", "help")
	if code != 0 || !strings.HasPrefix(strings.SplitN(out, "Everyday commands:\n", 2)[1], "  run ") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	last := 0
	for _, name := range []string{"run", "ls", "attach", "answer", "send", "wait", "board", "Panes and the daemon:", "screen", "Other commands:", "version"} {
		i := strings.Index(out, "\n  "+name+" ")
		if strings.HasSuffix(name, ":") {
			i = strings.Index(out, name)
		}
		if i < last {
			t.Fatalf("%q is not in its place:\n%s", name, out)
		}
		last = i
	}
	if strings.Contains(out, "fake-agent") {
		t.Errorf("a hidden command is listed:\n%s", out)
	}
}

func TestFlagMistakesSayTheFix(t *testing.T) {
	isolate(t)
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"run", "sh", "-c", "x"}, "unknown flag --c; put the command after --: corral run -- sh -c x"},
		{[]string{"run", "--name", "a b", "sh", "-c", "echo hi"}, "put the command after --: corral run --name 'a b' -- sh -c 'echo hi'"},
		{[]string{"exec", "claude", "-p", "hi"}, "put the command after --: corral exec -- claude -p hi"},
		{[]string{"ls", "--jsn"}, "unknown flag --jsn; did you mean --json?"},
		{[]string{"ls", "-jsn"}, "unknown flag --jsn; did you mean --json?"},
		{[]string{"ls", "--json=maybe"}, "--json takes no value"},
		{[]string{"wait", "x", "--timeout", "soon"}, `--timeout "soon": not a duration; use one like 90s`},
		{[]string{"wait", "x", "--timeout"}, "--timeout needs a value: --timeout DURATION"},
		{[]string{"lab", "--tasks", "many"}, `--tasks "many": not a number`},
		{[]string{"rules", "list", "--bogus"}, "corral rules list: unknown flag --bogus\nusage: corral rules list [flags]\nRun corral help rules list"},
		{[]string{"rules", "check", "a", "b"}, "corral rules check: at most one folder\nusage: corral rules check [DIR|FILE] [flags]"},
		{[]string{"lss"}, `unknown command "lss"; did you mean corral ls?`},
		{[]string{"--json"}, "--json goes after a command"},
		{[]string{"help", "atach"}, "did you mean attach?"},
		{[]string{"rules", "lst"}, `unknown rules command "lst"; did you mean rules list?`},
		{[]string{"fleet"}, "corral fleet: say which: forget, init, invite, join, join-hub, leave, set, status\nusage: corral fleet init|join|join-hub|status|leave|invite|forget|set [flags]"},
		{[]string{"replay", "--size=big", "x.cast"}, "size \"big\" must be COLSxROWS"},
	}
	for _, tt := range tests {
		out, errs, code := run(t, "", tt.args...)
		if code != 2 || !strings.Contains(errs, tt.msg) || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q", tt.args, code, out, errs, tt.msg)
		}
		if strings.Contains(errs, "flag provided") || singleDash.MatchString(strings.ReplaceAll(errs, " -c", "")) {
			t.Errorf("%q: the flag package's words or a single-dash flag: %q", tt.args, errs)
		}
	}
}

// The forms a flag may take: --name value, --name=value, after the
// arguments, and -name (the standard flag package's, which corral took
// before), all the same.
func TestFlagForms(t *testing.T) {
	isolate(t)
	cast := filepath.Join(casts, "claude-code/claude-code-100x30.cast")
	want, errs, code := run(t, "", "replay", "--json", "--agent", "claude-code", cast)
	if code != 0 || want == "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, args := range [][]string{
		{"replay", "--json", "--agent=claude-code", cast},
		{"replay", cast, "--agent", "claude-code", "--json"},
		{"replay", "-json", "-agent", "claude-code", cast},
		{"replay", "-json", "-agent=claude-code", "--", cast},
	} {
		if out, errs, code := run(t, "", args...); code != 0 || out != want {
			t.Errorf("%q: exit %d, %s\n%.200s", args, code, errs, out)
		}
	}
	if _, errs, code := run(t, "", "replay", "--", "--json", cast); code != 2 || !strings.Contains(errs, "need one recording file") {
		t.Errorf("after --, --json is an argument: exit %d %q", code, errs)
	}
}

// A hook never fails its agent, not even on a flag it does not know.
func TestHookIgnoresFlagMistakes(t *testing.T) {
	isolate(t)
	if out, errs, code := run(t, "{}", "hook", "--bogus"); code != 0 || out != "" || errs != "" {
		t.Errorf("hook --bogus: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
