package cli

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/api"
)

// completeCmd is the hidden helper the completion scripts call with the
// words typed so far (the last one is the word being completed); it
// prints the candidates, one a line. It never starts a daemon.
const completeCmd = "__complete"

// The scripts hand every word after "corral" to the helper and offer its
// answer; with no answer the shell completes file names.
var completionScripts = map[string]string{
	"bash": `# corral completion for bash: source <(corral completion bash)
_corral() {
    local IFS=$'\n'
    COMPREPLY=($(corral __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -o bashdefault -F _corral corral
`,
	"zsh": `#compdef corral
# corral completion for zsh: source <(corral completion zsh), after compinit
_corral() {
    local -a items
    items=("${(@f)$(corral __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    if [[ -n ${items[1]} ]]; then
        compadd -a items
    else
        _files
    fi
}
compdef _corral corral
`,
	"fish": `# corral completion for fish: corral completion fish > ~/.config/fish/completions/corral.fish
function __corral_complete
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    set -l found (corral __complete $words[2..-1] "$cur" 2>/dev/null)
    if test (count $found) -gt 0
        printf '%s\n' $found
    else
        __fish_complete_path "$cur"
    end
end
complete -c corral -f -a '(__corral_complete)'
`,
}

func runCompletion(_ context.Context, std IO, args []string) error {
	fs := newFlags("completion", std)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || completionScripts[pos[0]] == "" {
		return usagef("say which shell: bash, zsh or fish")
	}
	fmt.Fprint(std.Stdout, completionScripts[pos[0]])
	return nil
}

// Positional arguments that are panes, by command: "all" every one, else
// the positions (0-based) that are.
var paneArgs = map[string][]int{
	"attach": {0}, "answer": {0}, "send": {0}, "screen": {0}, "kill": {0},
	"wait": nil, "rm": nil, // every argument
}

// fixedArgs are the choices of a positional argument, by command and position.
var fixedArgs = map[string]map[int][]string{
	"answer":     {1: {"yes", "always", "no", "cancel", "1", "2", "3"}},
	"status":     {0: {"idle", "working", "blocked", "done", "error", "clear"}},
	"integrate":  {0: {"gemini"}},
	"completion": {0: {"bash", "fish", "zsh"}},
}

// flagValues are the choices of a flag's value, by flag name.
var flagValues = map[string][]string{
	"state":  {"working", "blocked", "idle", "done", "error", "exited"},
	"signal": {"TERM", "INT", "HUP", "KILL", "QUIT", "USR1", "USR2"},
	"kind":   {"permission", "question", "auth"},
	"mode":   {"pipe", "pty-lite"},
}

func runComplete(ctx context.Context, std IO, words []string) error {
	for _, c := range complete(ctx, words) {
		fmt.Fprintln(std.Stdout, c)
	}
	return nil
}

// complete returns the candidates for the last of words (those after
// "corral"), filtered by what it starts with.
func complete(ctx context.Context, words []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur := words[len(words)-1]
	done := words[:len(words)-1]
	if len(done) == 0 {
		return withPrefix(commandNames(), cur)
	}
	name := done[0]
	if name == "help" {
		if len(done) == 1 {
			return withPrefix(commandNames(), cur)
		}
		if subs := subcommandNames(done[1]); len(subs) > 0 && len(done) == 2 {
			return withPrefix(subs, cur)
		}
		return nil
	}
	if subs := subcommandNames(name); len(subs) > 0 {
		if len(done) == 1 {
			return withPrefix(subs, cur)
		}
		name, done = name+" "+done[1], done[1:]
	}
	c, ok := lookup(name)
	if !ok || c.group == "" {
		return nil
	}
	fs := flagsOf(ctx, c)
	// Walk the words: flags, their values, and the positional arguments.
	pos := 0
	for i := 1; i < len(done); i++ {
		w := done[i]
		switch {
		case w == "--":
			return nil // the program's own arguments: the shell's files
		case strings.HasPrefix(w, "-") && len(w) > 1:
			if f := lookupFlag(fs, w); f != nil && !isBool(f) && !strings.Contains(w, "=") {
				i++ // its value
			}
		default:
			pos++
		}
	}
	// The value of a flag.
	if len(done) > 1 {
		if f := lookupFlag(fs, done[len(done)-1]); f != nil && !isBool(f) && !strings.Contains(done[len(done)-1], "=") {
			if f.Name == "agent" {
				return withPrefix(agentNames(name), cur)
			}
			if f.Name == "state" {
				return withPrefix(stateList(cur), cur)
			}
			return withPrefix(flagValues[f.Name], cur)
		}
	}
	if strings.HasPrefix(cur, "-") {
		var out []string
		if fs != nil {
			fs.VisitAll(func(f *flag.Flag) {
				if f.Usage != "" {
					out = append(out, "--"+f.Name)
				}
			})
		}
		return withPrefix(append(out, "--help"), cur)
	}
	if choices := fixedArgs[name][pos]; choices != nil {
		return withPrefix(choices, cur)
	}
	if at, ok := paneArgs[name]; ok && (at == nil || contains(at, pos)) {
		return withPrefix(paneRefs(ctx), cur)
	}
	return nil
}

// lookupFlag finds the flag a word names (-x, --x, --x=v).
func lookupFlag(fs *flag.FlagSet, w string) *flag.Flag {
	if fs == nil || !strings.HasPrefix(w, "-") {
		return nil
	}
	n, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
	return fs.Lookup(n)
}

// stateList completes a comma-separated list of states.
func stateList(cur string) []string {
	head := ""
	if i := strings.LastIndex(cur, ","); i >= 0 {
		head = cur[:i+1]
	}
	var out []string
	for _, s := range flagValues["state"] {
		out = append(out, head+s)
	}
	return out
}

// agentNames are the values of --agent for a command.
func agentNames(cmd string) []string {
	switch cmd {
	case "exec":
		return []string{"acp", "auto", "claude", "codex", "gemini", "qwen"}
	case "hook":
		return []string{"claude-code", "codex", "gemini"}
	}
	set, _ := loader().Load(nil)
	return set.Names()
}

// paneRefs are the running daemon's pane ids and names; none when no
// daemon answers at once (completion never starts one).
func paneRefs(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var panes []api.Pane
	if err := clientNoStart().Do(ctx, "GET", "/v1/panes", nil, &panes); err != nil {
		return nil
	}
	var out []string
	for _, p := range panes {
		if p.Name != "" {
			out = append(out, p.Name)
		}
		out = append(out, p.ID)
	}
	return out
}

func withPrefix(list []string, prefix string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range list {
		if strings.HasPrefix(s, prefix) && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

func contains(list []int, x int) bool {
	for _, v := range list {
		if v == x {
			return true
		}
	}
	return false
}
