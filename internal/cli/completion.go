package cli

import (
	"context"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/agentdef"
	"github.com/corral-dev/corral/internal/api"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runCompletion prints cobra's completion script for a shell. The script
// calls the hidden corral __complete with the words typed so far, which
// answers from the command tree: commands, flags, and the values below.
func runCompletion(*pflag.FlagSet) runFunc {
	return func(ctx context.Context, std IO, pos []string) error {
		cmd := commandOf(ctx)
		if len(pos) != 1 || cmd == nil {
			return usagef("say which shell: bash, zsh, fish or powershell")
		}
		root := cmd.Root()
		switch pos[0] {
		case "bash":
			var b strings.Builder
			if err := root.GenBashCompletionV2(&b, true); err != nil {
				return err
			}
			_, err := io.WriteString(std.Stdout, withoutBashCompletion(b.String()))
			return err
		case "zsh":
			return root.GenZshCompletion(std.Stdout)
		case "fish":
			return root.GenFishCompletion(std.Stdout, true)
		case "powershell":
			return root.GenPowerShellCompletionWithDesc(std.Stdout)
		}
		return usagef("say which shell: bash, zsh, fish or powershell")
	}
}

// withoutBashCompletion makes cobra's bash script work without the
// bash-completion package too (cobra's needs its _get_comp_words_by_ref):
// then the words are those bash split.
func withoutBashCompletion(script string) string {
	const call = `_get_comp_words_by_ref "$@" cur prev words cword`
	return strings.Replace(script, call, `if declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
        `+call+`
    else
        words=("${COMP_WORDS[@]}") cword=$COMP_CWORD cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    fi`, 1)
}

// flagValues are the choices of a flag's value, by flag name.
var flagValues = map[string][]string{
	"state":  {"working", "blocked", "idle", "done", "error", "exited"},
	"signal": {"TERM", "INT", "HUP", "KILL", "QUIT", "USR1", "USR2"},
	"kind":   {"permission", "question", "auth"},
	"mode":   {"pipe", "pty-lite"},
}

// addCompletion gives a command of the table its dynamic completion: the
// choices of its positional arguments and of its flags' values.
func addCompletion(cc *cobra.Command, c command) {
	if c.name == "help" {
		cc.ValidArgsFunction = func(cmd *cobra.Command, args []string, cur string) ([]string, cobra.ShellCompDirective) {
			switch len(args) {
			case 0:
				return withPrefix(commandNames(), cur), cobra.ShellCompDirectiveNoFileComp
			case 1:
				return withPrefix(subcommandNames(args[0]), cur), cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return
	}
	if c.panes != 0 || c.choices != nil {
		cc.ValidArgsFunction = func(cmd *cobra.Command, args []string, cur string) ([]string, cobra.ShellCompDirective) {
			pos := len(args)
			if c.panes == allPanes || c.panes == onePane && pos == 0 {
				return withPrefix(paneRefs(contextOf(cmd)), cur), cobra.ShellCompDirectiveNoFileComp
			}
			if c.panes == onePane {
				pos--
			}
			if pos == 0 && c.name == "answer" && len(args) == 1 {
				if live := promptAnswers(contextOf(cmd), args[0]); live != nil {
					return withPrefix(live, cur), cobra.ShellCompDirectiveNoFileComp
				}
			}
			if pos == 0 && c.choices != nil {
				return withPrefix(c.choices, cur), cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveDefault
		}
	}
	cc.Flags().VisitAll(func(f *pflag.Flag) {
		var values func(cur string) []string
		switch {
		case f.Name == "agent":
			values = func(string) []string { return agentNames(c.name) }
		case f.Name == "state":
			values = stateList
		case flagValues[f.Name] != nil:
			list := flagValues[f.Name]
			values = func(string) []string { return list }
		default:
			return
		}
		_ = cc.RegisterFlagCompletionFunc(f.Name, func(_ *cobra.Command, _ []string, cur string) ([]string, cobra.ShellCompDirective) {
			return withPrefix(values(cur), cur), cobra.ShellCompDirectiveNoFileComp
		})
	})
}

func contextOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
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
		return append([]string{"acp", "auto"}, agentdef.BuiltIn().ExecNames()...)
	case "hook":
		var out []string
		for _, a := range agentdef.BuiltIn().All() {
			if a.Hooks.Integration != "" {
				out = append(out, a.Hooks.Integration)
			}
		}
		return out
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

// promptAnswers are the answers the prompt of pane ref takes now, its
// rule's own choices among them (nil: the daemon does not answer, or the
// pane is not waiting on a prompt corral reads).
func promptAnswers(ctx context.Context, ref string) []string {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var p api.Pane
	if err := clientNoStart().Do(ctx, "GET", panePath(ref, ""), nil, &p); err != nil || p.Prompt == nil {
		return nil
	}
	out := append([]string(nil), p.Prompt.Answers...)
	if p.Prompt.Options {
		out = append(out, "1", "2", "3")
	}
	for _, c := range p.Prompt.Choices {
		out = append(out, c.Name)
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
