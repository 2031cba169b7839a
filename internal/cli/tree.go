package cli

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() {
	// corral help lists the commands in the table's order, not sorted.
	cobra.EnableCommandSorting = false
}

// newTree builds the cobra command tree from the commands table, for one
// command line (args: what follows "corral"). Each command's flags live in
// its run function's closure, so a tree serves one run.
func newTree(std IO, args []string) *cobra.Command {
	root := &cobra.Command{
		Use:                   "corral",
		Short:                 "run terminal coding agents in panes and know whether each is working, blocked on you, idle, done, in error or exited",
		Long:                  about + " With no arguments, in a terminal, corral opens the terminal board.",
		SilenceErrors:         true,
		SilenceUsage:          true,
		DisableFlagsInUseLine: true,
		DisableAutoGenTag:     true,
		Args:                  cobra.ArbitraryArgs,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetIn(std.Stdin)
	root.SetOut(std.Stdout)
	root.SetErr(std.Stderr)
	root.Flags().BoolP("help", "h", false, "this page")
	for _, g := range groups {
		root.AddGroup(&cobra.Group{ID: g, Title: g + ":"})
	}
	byName := map[string]*cobra.Command{"": root}
	for _, c := range commands {
		parent, leaf := "", c.name
		if i := strings.LastIndex(c.name, " "); i > 0 {
			parent, leaf = c.name[:i], c.name[i+1:]
		}
		cc := &cobra.Command{
			Use:                   strings.TrimSpace(leaf + " " + c.args),
			Short:                 firstClause(c.summary),
			Long:                  capitalize(c.summary),
			Example:               example(c.example),
			Hidden:                c.group == "",
			Args:                  cobra.ArbitraryArgs,
			DisableFlagParsing:    c.rawArgs,
			DisableFlagsInUseLine: true,
			DisableAutoGenTag:     true,
		}
		if c.group != "" && c.group != grpSub {
			cc.GroupID = c.group
		}
		cc.Flags().BoolP("help", "h", false, "this page")
		run := c.run(cc.Flags())
		keepDash := c.keepDash
		cc.RunE = func(cmd *cobra.Command, args []string) error {
			if at := cmd.ArgsLenAtDash(); keepDash && at >= 0 && !cmd.DisableFlagParsing {
				args = slices.Insert(slices.Clone(args), at, "--")
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return run(context.WithValue(ctx, commandKey{}, cmd), std, args)
		}
		addCompletion(cc, c)
		byName[parent].AddCommand(cc)
		byName[c.name] = cc
	}
	root.SetHelpCommand(byName["help"])
	root.SetHelpFunc(func(cmd *cobra.Command, _ []string) {
		if cmd == root {
			printUsage(cmd.OutOrStdout())
			return
		}
		writePage(cmd.OutOrStdout(), cmd)
	})
	line := singleDashed(root, args)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		if cmd.Name() == "hook" {
			return nil // a hook never fails its agent: exit 0
		}
		return flagError(cmd, err, after(cmd, line))
	})
	root.SetArgs(line)
	return root
}

// commandKey carries the running cobra command in a run's context.
type commandKey struct{}

// commandOf is the cobra command running (nil: none).
func commandOf(ctx context.Context) *cobra.Command {
	c, _ := ctx.Value(commandKey{}).(*cobra.Command)
	return c
}

// pathOf is a command's name as typed after corral: "rules list".
func pathOf(c *cobra.Command) string {
	if c == nil {
		return ""
	}
	return strings.TrimSpace(strings.TrimPrefix(c.CommandPath(), "corral"))
}

// after returns what follows the command's name on the command line (nil:
// the name is not at its head).
func after(c *cobra.Command, args []string) []string {
	words := strings.Fields(pathOf(c))
	if len(args) < len(words) || !slices.Equal(args[:len(words)], words) {
		return nil
	}
	return args[len(words):]
}

// singleDashed rewrites a long flag written with one dash (-json, the
// standard flag package's way, which corral took before) as --json:
// pflag would read -json as the shorthands -j -s -o -n. Only the words
// before "--" that are not a flag's value are rewritten; a single letter
// (-h, -L) is rewritten only when it is a flag's whole name.
func singleDashed(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd.DisableFlagParsing {
		return args
	}
	rest := after(cmd, args)
	if rest == nil {
		return args
	}
	out := slices.Clone(args)
	fs := cmd.Flags()
	for i := len(args) - len(rest); i < len(out); i++ {
		w := out[i]
		if w == "--" {
			break
		}
		if len(w) < 2 || w[0] != '-' {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if w[1] != '-' && (len(name) > 1 || fs.Lookup(name) != nil) {
			out[i] = "-" + w
		}
		if f := fs.Lookup(name); f != nil && !hasValue && !isBool(f) && strings.HasPrefix(out[i], "--") {
			i++ // its value
		}
	}
	return out
}

// firstPositional is the index in args of the first positional argument
// before an unknown flag, or -1.
func firstPositional(fs *pflag.FlagSet, args []string) int {
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case w == "--":
			return -1
		case len(w) > 1 && w[0] == '-':
			name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
			f := fs.Lookup(name)
			if f == nil && w[1] != '-' && len(name) == 1 {
				f = fs.ShorthandLookup(name)
			}
			if f == nil {
				return -1
			}
			if !hasValue && !isBool(f) {
				i++
			}
		default:
			return i
		}
	}
	return -1
}

// example indents a row's example lines as cobra prints them.
func example(lines string) string {
	if lines == "" {
		return ""
	}
	return indent(lines, "  ")
}
