package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The completion scripts, loaded into real shells, complete against a
// running daemon: commands, flags, flag values and pane names. Each shell's
// driver prints "LINE|CANDIDATES" for each line of completionCases.
var completionDrivers = map[string]string{
	// bash: the function complete -p names, with the words bash would set.
	"bash": `
source "$1"; shift
compopt() { :; } # outside a completion there is nothing to set
fn=$(complete -p corral | sed -n 's/.*-F \([^ ]*\) corral$/\1/p')
[ -n "$fn" ] || { echo "no completion function for corral"; exit 1; }
for line in "$@"; do
    read -ra COMP_WORDS <<<"$line"
    [[ $line == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE=$line; COMP_POINT=${#line}
    COMPREPLY=()
    "$fn"
    echo "$line|${COMPREPLY[*]}"
done
`,
	// zsh: the script under compinit, then its function with compadd
	// caught (a widget needs a terminal).
	"zsh": `
autoload -U compinit; compinit -u -D
source "$1"; shift
[[ $_comps[corral] == _corral ]] || { echo "compdef did not register _corral"; exit 1; }
_describe() { [[ $1 == -V ]] && shift; local -a c=("${(@P)2}"); print -rn -- "${(@)c%%:*}" }
_arguments() { print -rn -- "<files>" }
compadd() { : }
for line in "$@"; do
    words=(${(z)line}); [[ $line == *" " ]] && words+=("")
    CURRENT=${#words}
    print -rn -- "$line|"; _corral; print
done
`,
	// fish: complete -C, as at a prompt, without the descriptions.
	"fish": `
source $argv[1]
for line in $argv[2..-1]
    echo "$line|"(string join -- " " (complete -C "$line" | string replace -r '\t.*' ''))
end
`,
}

func TestShellCompletion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	builder := strings.TrimSpace(e.must("run", "--name", "builder", "--", "sleep", "60"))
	id := strings.TrimSpace(e.must("run", "--", "sleep", "60"))
	refs := []string{"builder", builder, id}
	sort.Strings(refs)
	cases := []struct{ line, want string }{
		{"corral att", "attach"},
		{"corral ls --j", "--json"},
		{"corral attach bui", "builder"},
		{"corral wait ", strings.Join(refs, " ")},
		{"corral answer builder al", "always"},
		{"corral run --agent co", "codex copilot"},
		{"corral wait builder --state idle,b", "idle,blocked"},
	}
	var lines []string
	for _, c := range cases {
		lines = append(lines, c.line)
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		t.Run(sh, func(t *testing.T) {
			bin, err := exec.LookPath(sh)
			if err != nil {
				need(t, sh)
			}
			script := filepath.Join(e.dir, "completion."+sh)
			if err := os.WriteFile(script, []byte(e.must("completion", sh)), 0o600); err != nil {
				t.Fatal(err)
			}
			var cmd *exec.Cmd
			switch sh {
			case "bash":
				cmd = exec.Command(bin, append([]string{"--norc", "--noprofile", "-c", completionDrivers[sh], "driver", script}, lines...)...)
			case "zsh":
				cmd = exec.Command(bin, append([]string{"-f", "-c", completionDrivers[sh], "driver", script}, lines...)...)
			case "fish":
				cmd = exec.Command(bin, append([]string{"--no-config", "-c", completionDrivers[sh], script}, lines...)...)
			}
			cmd.Dir = e.dir
			cmd.Env = append(e.vars[:len(e.vars):len(e.vars)], "PATH="+filepath.Dir(corralBin)+":"+os.Getenv("PATH"), "TMPDIR="+e.dir)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", sh, err, out)
			}
			got := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
			if len(got) != len(cases) {
				t.Fatalf("%s printed:\n%s", sh, out)
			}
			// The order is the shell's own (fish sorts "5tf2t" before
			// "557hv"): the candidates are compared as a set.
			sorted := func(line string) string {
				head, cands, _ := strings.Cut(line, "|")
				// bash inserts a candidate quoted (idle\,blocked): the
				// same word.
				f := strings.Fields(strings.ReplaceAll(cands, `\`, ""))
				sort.Strings(f)
				return head + "|" + strings.Join(f, " ")
			}
			for i, c := range cases {
				if want := c.line + "|" + c.want; sorted(got[i]) != sorted(want) {
					t.Errorf("%s: got %q, want %q", sh, got[i], want)
				}
			}
		})
	}
	// The helper never starts a daemon.
	e.must("shutdown")
	if out, _, _ := e.run("__complete", "attach", ""); strings.TrimSpace(out) != ":4" {
		t.Fatalf("no daemon, yet %q", out)
	}
	if out := e.must("version"); !strings.Contains(out, "daemon: not running") {
		t.Fatalf("__complete started a daemon: %s", out)
	}
}
