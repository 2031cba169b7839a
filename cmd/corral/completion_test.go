package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestBashCompletion loads corral's completion script into a real bash and
// completes against a running daemon: commands, flags, and pane names.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	e := newEnv(t)
	builder := strings.TrimSpace(e.must("run", "--name", "builder", "--", "sleep", "60"))
	id := strings.TrimSpace(e.must("run", "--", "sleep", "60"))
	refs := []string{"builder", builder, id}
	sort.Strings(refs)
	script := e.must("completion", "bash")
	// Each case sets the words as bash would and calls the function that
	// complete -p names.
	driver := `
set -e
source "$1"
fn=$(complete -p corral | sed -n 's/.*-F \([^ ]*\) corral$/\1/p')
[ -n "$fn" ] || { echo "no completion function for corral"; exit 1; }
try() { # try CWORD WORDS...
    COMP_CWORD=$1; shift
    COMP_WORDS=("$@"); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
    COMPREPLY=()
    "$fn"
    echo "$*|${COMPREPLY[*]}"
}
try 1 corral att
try 2 corral ls --j
try 2 corral attach bui
try 2 corral wait ""
try 3 corral answer builder al
try 4 corral run --agent co
`
	file := filepath.Join(e.dir, "completion.bash")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", driver, "driver", file)
	cmd.Env = append(e.vars[:len(e.vars):len(e.vars)], "PATH="+filepath.Dir(corralBin)+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	want := strings.Join([]string{
		"corral att|attach",
		"corral ls --j|--json",
		"corral attach bui|builder",
		"corral wait |" + strings.Join(refs, " "),
		"corral answer builder al|always",
		"corral run --agent co|codex copilot",
	}, "\n") + "\n"
	if string(out) != want {
		t.Fatalf("completions:\n%s\nwant:\n%s", out, want)
	}
	// The helper never starts a daemon.
	e.must("shutdown")
	if out, _, _ := e.run("__complete", "attach", ""); out != "" {
		t.Fatalf("no daemon, yet %q", out)
	}
	if out := e.must("version"); !strings.Contains(out, "daemon: not running") {
		t.Fatalf("__complete started a daemon: %s", out)
	}
}
