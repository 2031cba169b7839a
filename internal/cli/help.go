package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// synopsis is a command's usage line.
func synopsis(c *cobra.Command) string {
	args := strings.TrimPrefix(c.Use, c.Name())
	return strings.TrimSpace(c.CommandPath() + " " + strings.TrimSpace(args))
}

const about = "corral runs terminal coding agents in panes and knows whether each is working, blocked on you, idle, done, in error or exited."

func printUsage(w io.Writer) {
	fmt.Fprintln(w, about)
	fmt.Fprintln(w, "\nusage: corral COMMAND [ARGS] [flags]")
	fmt.Fprintln(w, "       corral              (in a terminal: the terminal board)")
	for _, g := range groups {
		fmt.Fprintf(w, "\n%s:\n", g)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, c := range commands {
			if c.group == g {
				fmt.Fprintf(tw, "  %s\t%s\n", c.name, firstClause(c.summary))
			}
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\nRun corral help COMMAND (or corral COMMAND --help) for its flags and an example.")
}

// firstClause shortens a summary for the list of commands.
func firstClause(s string) string {
	if i := strings.Index(s, "; exit 0"); i > 0 {
		return s[:i]
	}
	return s
}

// runHelp prints the commands, or one command's page: the same page as
// corral CMD --help.
func runHelp(*pflag.FlagSet) runFunc {
	return func(ctx context.Context, std IO, pos []string) error {
		if len(pos) == 0 {
			printUsage(std.Stdout)
			return nil
		}
		name := strings.Join(pos, " ")
		c, ok := lookup(name)
		cmd := commandOf(ctx)
		if !ok || c.group == "" && c.summary == "" || cmd == nil {
			if near := closest(name, commandNames()); near != "" {
				return usagef("unknown command %q; did you mean %s?", name, near)
			}
			return usagef("unknown command %q; corral help lists them", name)
		}
		page, _, err := cmd.Root().Find(pos)
		if err != nil {
			return err
		}
		writePage(std.Stdout, page)
		return nil
	}
}

// writePage writes a command's help page, its flags read from its flag set.
func writePage(w io.Writer, c *cobra.Command) {
	if c.Long != "" {
		fmt.Fprintf(w, "%s\n\n", wrap(c.Long, 100))
	}
	fmt.Fprintf(w, "usage: %s\n", synopsis(c))
	var subs []*cobra.Command
	for _, s := range c.Commands() {
		if !s.Hidden {
			subs = append(subs, s)
		}
	}
	if len(subs) > 0 {
		fmt.Fprintln(w, "\nCommands:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, s := range subs {
			fmt.Fprintf(tw, "  %s\t%s\n", pathOf(s), s.Short)
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\nFlags:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" || f.Usage == "" || f.Hidden {
			return
		}
		arg, usage := placeholder(f)
		if !isZero(f) {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(tw, "  --%s %s\t%s\n", f.Name, arg, usage)
	})
	fmt.Fprintf(tw, "  -h, --help\tthis page\n")
	tw.Flush()
	if c.Example != "" {
		fmt.Fprintf(w, "\nExample:\n%s\n", c.Example)
	}
}

// wrap breaks s into lines of at most width columns, between words.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(s) {
		if i > 0 && n+1+len(word) > width {
			b.WriteByte('\n')
			n = 0
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// placeholder is how a flag's value is written on the help page: a
// `word` in its usage, else from its type or name.
func placeholder(f *pflag.Flag) (arg, usage string) {
	arg, usage = pflag.UnquoteUsage(f)
	switch {
	case isBool(f):
		arg = ""
	case strings.Contains(f.Usage, "`"):
	case arg == "duration":
		arg = "DURATION"
	case arg == "int" || arg == "uint" || arg == "float":
		arg = "N"
	default:
		arg = strings.ToUpper(f.Name)
	}
	return arg, usage
}

// isBool: the flag may stand alone, without a value (--json, --worktree).
func isBool(f *pflag.Flag) bool {
	return f.NoOptDefVal != "" || f.Value.Type() == "bool"
}

func isZero(f *pflag.Flag) bool {
	switch f.DefValue {
	case "", "false", "0", "0s", "[]", "-1":
		return true
	}
	return false
}

// flagError rewrites pflag's message in the CLI's words (--flag, always)
// with the fix; rest is what follows the command's name on the line.
func flagError(c *cobra.Command, err error, rest []string) error {
	fs := c.Flags()
	ue := &usageError{msg: err.Error(), cmd: pathOf(c)}
	var notExist *pflag.NotExistError
	var needsValue *pflag.ValueRequiredError
	var invalid *pflag.InvalidValueError
	var syntax *pflag.InvalidSyntaxError
	switch {
	case errors.As(err, &notExist):
		f := notExist.GetSpecifiedName()
		if sh := notExist.GetSpecifiedShortnames(); sh != "" {
			f = sh
		}
		ue.msg = "unknown flag --" + f
		if firstPos := firstPositional(fs, rest); firstPos >= 0 && strings.Contains(c.Use, "-- ") {
			// corral run sh -c x: the program's flags were read as corral's.
			fixed := append(append(append(strings.Fields(c.CommandPath()), rest[:firstPos]...), "--"), rest[firstPos:]...)
			ue.msg += "; put the command after --: " + shellJoin(fixed)
		} else if near := closest(f, flagNames(fs)); near != "" {
			ue.msg += "; did you mean --" + near + "?"
		}
	case errors.As(err, &needsValue):
		f := needsValue.GetFlag()
		ue.msg = dashed(f.Name) + " needs a value"
		if arg, _ := placeholder(f); arg != "" {
			ue.msg += ": " + dashed(f.Name) + " " + arg
		}
	case errors.As(err, &invalid):
		f, value := invalid.GetFlag(), invalid.GetValue()
		ue.msg = fmt.Sprintf("%s %q: %v", dashed(f.Name), value, errors.Unwrap(err))
		switch arg, _ := placeholder(f); {
		case isBool(f):
			ue.msg = fmt.Sprintf("%s takes no value (or =true, =false)", dashed(f.Name))
		case arg == "DURATION":
			ue.msg = fmt.Sprintf("%s %q: not a duration; use one like 90s, 10m or 1h30m", dashed(f.Name), value)
		case arg == "N":
			ue.msg = fmt.Sprintf("%s %q: not a number", dashed(f.Name), value)
		}
	case errors.As(err, &syntax):
		ue.msg = fmt.Sprintf("bad flag %s: flags look like --name or --name=value", syntax.GetSpecifiedFlag())
	}
	return ue
}

func flagNames(fs *pflag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Usage != "" {
			names = append(names, f.Name)
		}
	})
	return names
}

// dashed writes a flag the way the CLI does: --name.
func dashed(f string) string { return "--" + strings.TrimLeft(f, "-") }

// shellJoin quotes what a shell would split differently.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// closest is the candidate within two edits of s (a typo), or "".
func closest(s string, candidates []string) string {
	best, bestD := "", 3
	sort.Strings(candidates)
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD && d < len(c) {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
