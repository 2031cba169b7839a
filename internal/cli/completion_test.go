package cli

import (
	"context"
	"strings"
	"testing"
)

func TestCompleteWithoutDaemon(t *testing.T) {
	isolate(t) // no daemon: pane names are simply not offered, and none is started
	tests := []struct {
		words []string
		want  string
	}{
		{[]string{""}, "answer attach board completion demo doctor events exec explain fleet help hook integrate jobs kill lab ls policy replay restart restore rm rules run screen send serve shutdown status tmux verify version wait"},
		{[]string{"a"}, "answer attach"},
		{[]string{"ls", "--"}, "--fleet --help --host --json --state"},
		{[]string{"ls", "-"}, "--fleet --help --host --json --state"},
		{[]string{"run", "--s"}, "--size"},
		{[]string{"run", "--agent", "c"}, "claude-code codex copilot"},
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
		{[]string{"fleet", ""}, "forget init invite join leave set status"},
		{[]string{"tmux", ""}, "ls unwatch watch"},
		{[]string{"help", "rules", "l"}, "list"},
		{[]string{"completion", ""}, "bash fish zsh"},
		{[]string{"status", "b"}, "blocked"},
		{[]string{"nope", ""}, ""},
		{[]string{"attach", ""}, ""},
	}
	for _, tt := range tests {
		if got := strings.Join(complete(context.Background(), tt.words), " "); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.words, got, tt.want)
		}
	}
	out, _, code := run(t, "", "__complete", "ver")
	if code != 0 || out != "verify\nversion\n" {
		t.Errorf("__complete ver: exit %d %q", code, out)
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if out, _, code := run(t, "", "completion", sh); code != 0 || !strings.Contains(out, "corral __complete") {
			t.Errorf("completion %s: exit %d\n%s", sh, code, out)
		}
	}
	if _, errs, code := run(t, "", "completion", "tcsh"); code != 2 || !strings.Contains(errs, "bash, zsh or fish") {
		t.Errorf("completion tcsh: exit %d %q", code, errs)
	}
}
