package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/cli is the CLI reference corral docs markdown writes: it says what
// the command table says today.
func TestCLIReferenceIsCurrent(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	if out, errs, code := run(t, "", "docs", "markdown", dir); code != 0 {
		t.Fatalf("docs markdown: exit %d\n%s%s", code, out, errs)
	}
	const committed = "../../docs/cli"
	const fix = "rm -r docs/cli && go run ./cmd/corral docs markdown docs/cli"
	want := readDir(t, dir)
	got := readDir(t, committed)
	for name, text := range want {
		switch old, ok := got[name]; {
		case !ok:
			t.Errorf("docs/cli lacks %s: %s", name, fix)
		case old != text:
			t.Errorf("docs/cli/%s is stale: %s", name, fix)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("docs/cli/%s is for no command: %s", name, fix)
		}
	}
	if !strings.Contains(want["corral_run.md"], "--size COLSxROWS") || !strings.Contains(want["corral.md"], "corral_fleet.md") {
		t.Errorf("the reference lacks run's flags or the fleet page:\n%s", want["corral.md"])
	}
}

func TestManPages(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	if out, errs, code := run(t, "", "docs", "man", dir); code != 0 {
		t.Fatalf("docs man: exit %d\n%s%s", code, out, errs)
	}
	pages := readDir(t, dir)
	for _, c := range commands {
		name := "corral-" + strings.ReplaceAll(c.name, " ", "-") + ".1"
		page, ok := pages[name]
		switch {
		case c.name == "help": // cobra gives the help command no page: every page is help
		case c.group == "" && ok:
			t.Errorf("a hidden command has a man page: %s", name)
		case c.group != "" && !ok:
			t.Errorf("no man page for corral %s (%s)", c.name, name)
		case ok && !strings.Contains(page, ".SH OPTIONS"):
			t.Errorf("%s has no options:\n%s", name, page)
		}
	}
	if !strings.Contains(pages["corral-wait.1"], "timeout") {
		t.Errorf("corral-wait.1 lacks --timeout:\n%s", pages["corral-wait.1"])
	}
	if _, errs, code := run(t, "", "docs", "man"); code != 2 || !strings.Contains(errs, "need the folder") {
		t.Errorf("docs man without a folder: exit %d %q", code, errs)
	}
}

// readDir returns the files of dir by name.
func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(data)
	}
	return files
}
