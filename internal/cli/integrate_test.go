package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIntegrateGemini(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("GEMINI_CLI_HOME", "")
	ext := filepath.Join(home, ".gemini", "extensions", "corral")
	if out, _, code := run(t, "", "integrate"); code != 0 || !strings.Contains(out, "gemini       not installed") {
		t.Fatalf("status before: %d %q", code, out)
	}
	if out, errs, code := run(t, "", "integrate", "gemini"); code != 0 || !strings.Contains(out, "installed "+ext) {
		t.Fatalf("install: %d %q %q", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(ext, "hooks", "hooks.json")); err != nil {
		t.Fatal(err)
	}
	if out, _, _ := run(t, "", "integrate"); !strings.Contains(out, "corral's extension in "+ext) {
		t.Fatalf("status after: %q", out)
	}
	if out, _, code := run(t, "", "integrate", "--json"); code != 0 || !strings.Contains(out, `"agent": "gemini",
    "installed": true`) {
		t.Fatalf("status --json: %d %q", code, out)
	}
	if out, _, code := run(t, "", "integrate", "gemini", "--remove"); code != 0 || !strings.Contains(out, "removed "+ext) {
		t.Fatalf("remove: %d %q", code, out)
	}
	if out, _, code := run(t, "", "integrate", "gemini", "--remove"); code != 0 || !strings.Contains(out, "nothing to remove") {
		t.Fatalf("remove again: %d %q", code, out)
	}
	if out, _, code := run(t, "", "integrate", "gemini", "--remove", "--json"); code != 0 || !strings.Contains(out, `"installed": false`) {
		t.Fatalf("remove --json: %d %q", code, out)
	}
	for _, args := range [][]string{{"integrate", "codex"}, {"integrate", "opencode"}, {"integrate", "gemini", "codex"}} {
		if _, errs, code := run(t, "", args...); code != 2 || errs == "" {
			t.Errorf("%v: exit %d %q", args, code, errs)
		}
	}
}
