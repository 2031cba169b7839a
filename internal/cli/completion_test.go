package cli

import (
	"sort"
	"strings"
	"testing"
)

func TestCompleteWithoutDaemon(t *testing.T) {
	isolate(t) // no daemon: pane names are simply not offered, and none is started
	tests := []struct {
		words []string
		want  string
	}{
		{[]string{""}, "answer attach board completion demo docs doctor events exec explain fleet help hook integrate jobs kill lab ls policy replay restart restore rm rules run screen send serve shutdown status tmux verify version wait"},
		{[]string{"a"}, "answer attach"},
		{[]string{"ls", "--"}, "--fleet --help --host --json --state"},
		{[]string{"ls", "-"}, "--fleet --help --host --json --state -h"},
		{[]string{"run", "--s"}, "--size"},
		{[]string{"run", "--agent", "c"}, "claude-code codex copilot crush"},
		{[]string{"exec", "--agent", ""}, "acp auto claude codex gemini qwen"},
		{[]string{"exec", "--mode", ""}, "pipe pty-lite"},
		{[]string{"run", "--name", "x", "--", "ls", "-"}, ""},
		{[]string{"wait", "x", "--state", "idle,b"}, "idle,blocked"},
		{[]string{"wait", "x", "--state=idle", "--timeout", "1m", "--j"}, "--json"},
		{[]string{"answer", "x", ""}, "1 2 3 always cancel no yes"},
		{[]string{"answer", "--json", "x", "y"}, "yes"},
		{[]string{"kill", "x", "--signal", "K"}, "KILL"},
		{[]string{"rules", ""}, "check list"},
		{[]string{"rules", "list", "--"}, "--help --json"},
		{[]string{"help", "r"}, "replay restart restore rm rules run"},
		{[]string{"fleet", ""}, "forget init invite join join-hub leave set status"},
		{[]string{"tmux", ""}, "ls unwatch watch"},
		{[]string{"help", "rules", "l"}, "list"},
		{[]string{"completion", ""}, "bash fish powershell zsh"},
		{[]string{"status", "b"}, "blocked"},
		{[]string{"nope", ""}, ""},
		{[]string{"attach", ""}, ""},
	}
	for _, tt := range tests {
		if got := strings.Join(complete(t, tt.words...), " "); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.words, got, tt.want)
		}
	}
	out, _, code := run(t, "", "__completeNoDesc", "ver")
	if code != 0 || out != "verify\nversion\n:4\n" {
		t.Errorf("__completeNoDesc ver: exit %d %q", code, out)
	}
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		if out, _, code := run(t, "", "completion", sh); code != 0 || !strings.Contains(out, "__complete") {
			t.Errorf("completion %s: exit %d\n%s", sh, code, out)
		}
	}
	if _, errs, code := run(t, "", "completion", "tcsh"); code != 2 || !strings.Contains(errs, "bash, zsh, fish or powershell") {
		t.Errorf("completion tcsh: exit %d %q", code, errs)
	}
}

// complete asks corral __complete, as the completion scripts do, for the
// candidates of the last word, and returns them sorted, without their
// descriptions and the directive line.
func complete(t *testing.T, words ...string) []string {
	t.Helper()
	out, errs, code := run(t, "", append([]string{"__complete"}, words...)...)
	if code != 0 {
		t.Fatalf("__complete %q: exit %d: %s", words, code, errs)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" || strings.HasPrefix(line, ":") {
			continue
		}
		cand, _, _ := strings.Cut(line, "\t")
		got = append(got, cand)
	}
	sort.Strings(got)
	return got
}
