package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// synopsis is a command's usage line.
func synopsis(c command) string {
	return strings.TrimSpace("corral " + c.name + " " + c.args)
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "corral runs terminal coding agents in panes and knows whether each is working, blocked on you, idle, done, in error or exited.")
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
// corral CMD --help, read from the command's own flag set.
func runHelp(ctx context.Context, std IO, args []string) error {
	fs := newFlags("help", std)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		printUsage(std.Stdout)
		return nil
	}
	name := strings.Join(pos, " ")
	c, ok := lookup(name)
	if !ok || c.group == "" && c.summary == "" {
		if near := closest(name, commandNames()); near != "" {
			return usagef("unknown command %q; did you mean %s?", name, near)
		}
		return usagef("unknown command %q; corral help lists them", name)
	}
	return printPage(ctx, std.Stdout, c)
}

// printPage prints a command's help page. Its flags come from running it
// with --help, which stops in parse before the command does anything.
func printPage(ctx context.Context, w io.Writer, c command) error {
	fs := flagsOf(ctx, c)
	writePage(w, c, fs)
	return nil
}

// writePage writes the page of c whose flags are fs (nil: none).
func writePage(w io.Writer, c command, fs *flag.FlagSet) {
	if c.summary != "" {
		fmt.Fprintf(w, "%s\n\n", wrap(capitalize(c.summary), 100))
	}
	fmt.Fprintf(w, "usage: %s\n", synopsis(c))
	var subs []command
	for _, s := range commands {
		if s.group == grpSub && strings.HasPrefix(s.name, c.name+" ") {
			subs = append(subs, s)
		}
	}
	if len(subs) > 0 {
		fmt.Fprintln(w, "\nCommands:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, s := range subs {
			fmt.Fprintf(tw, "  %s\t%s\n", s.name, s.summary)
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\nFlags:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if fs != nil {
		fs.VisitAll(func(f *flag.Flag) {
			if f.Name == "help" || f.Name == "h" || f.Usage == "" {
				return
			}
			arg, usage := placeholder(f)
			if !isZero(f) {
				usage += fmt.Sprintf(" (default %s)", f.DefValue)
			}
			fmt.Fprintf(tw, "  --%s %s\t%s\n", f.Name, arg, usage)
		})
	}
	fmt.Fprintf(tw, "  -h, --help\tthis page\n")
	tw.Flush()
	if c.example != "" {
		fmt.Fprintln(w, "\nExample:")
		for _, line := range strings.Split(c.example, "\n") {
			fmt.Fprintf(w, "  %s\n", line)
		}
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
func placeholder(f *flag.Flag) (arg, usage string) {
	arg, usage = flag.UnquoteUsage(f)
	switch {
	case isBool(f):
		arg = ""
	case strings.Contains(f.Usage, "`"):
	case arg == "duration":
		arg = "DURATION"
	case arg == "int" || arg == "int64" || arg == "uint" || arg == "float":
		arg = "N"
	default:
		arg = strings.ToUpper(f.Name)
	}
	return arg, usage
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func isZero(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "false", "0", "0s", "[]", "-1":
		return true
	}
	return isBool(f) && f.DefValue == "false"
}

// helpFlag is --help (and -h): it keeps where the page goes, so that a
// command's page needs nothing but its flag set.
type helpFlag struct {
	w  io.Writer
	on bool
}

func (h *helpFlag) String() string   { return "" }
func (h *helpFlag) IsBoolFlag() bool { return true }
func (h *helpFlag) Set(v string) error {
	h.on = v == "true" || v == "1"
	return nil
}

// newFlags returns a command's flag set. Declare a flag with a usage that
// says what it does; a `word` in backquotes names its value on the help
// page (--size COLSxROWS). parse prints the page on --help.
func newFlags(name string, std IO) *flag.FlagSet {
	fs := flag.NewFlagSet("corral "+name, flag.ContinueOnError)
	// The flag package's own messages and usage are replaced by parse's.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	h := &helpFlag{w: std.Stdout}
	fs.Var(h, "help", "")
	fs.Var(h, "h", "")
	return fs
}

// probeArg, alone on a command line, makes parse return the flag set
// instead of parsing: completion and help read a command's flags this way.
const probeArg = "\x00flags"

// probed carries a command's flag set out of parse.
type probed struct{ fs *flag.FlagSet }

func (p *probed) Error() string { return "flags probed" }

// flagsOf returns a command's flag set without running it (nil: it has
// no flag set, or does not stop in parse).
func flagsOf(ctx context.Context, c command) *flag.FlagSet {
	args := []string{probeArg}
	if i := strings.Index(c.name, " "); i > 0 { // a subcommand: through its parent
		args = []string{c.name[i+1:], probeArg}
		c, _ = lookup(c.name[:i])
	}
	if c.run == nil {
		return nil
	}
	var p *probed
	if errors.As(c.run(ctx, IO{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard}, args), &p) {
		return p.fs
	}
	return nil
}

// parse parses flags that may come before, between or after positional
// arguments, and returns the positional ones. "--" ends flags. On --help
// it prints the command's page and returns flag.ErrHelp; a mistake comes
// back as a usage error that says the fix.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	if len(args) == 1 && args[0] == probeArg {
		return nil, &probed{fs}
	}
	orig := args
	name := strings.TrimPrefix(fs.Name(), "corral ")
	var pos []string
	firstPos := -1 // where the first positional argument is in orig
	for {
		err := fs.Parse(args)
		if h, ok := fs.Lookup("help").Value.(*helpFlag); ok && h.on {
			c, ok := lookup(name)
			if !ok {
				c = command{name: name}
			}
			writePage(h.w, c, fs)
			return nil, flag.ErrHelp
		}
		if err != nil {
			return nil, flagError(fs, name, err, orig, firstPos)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		if firstPos < 0 {
			firstPos = len(orig) - len(args)
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// flagError rewrites the flag package's message in the CLI's words
// (--flag, always) with the fix.
func flagError(fs *flag.FlagSet, name string, err error, orig []string, firstPos int) error {
	msg := err.Error()
	ue := &usageError{cmd: name}
	switch {
	case strings.HasPrefix(msg, "flag provided but not defined: "):
		f := strings.TrimLeft(strings.TrimPrefix(msg, "flag provided but not defined: "), "-")
		ue.msg = "unknown flag --" + f
		c, _ := lookup(name)
		if firstPos >= 0 && strings.Contains(c.args, "-- ") {
			// corral run sh -c x: the program's flags were read as corral's.
			fixed := append(append(append([]string{"corral", name}, orig[:firstPos]...), "--"), orig[firstPos:]...)
			ue.msg += "; put the command after --: " + shellJoin(fixed)
		} else if near := closest(f, flagNames(fs)); near != "" {
			ue.msg += "; did you mean --" + near + "?"
		}
	case strings.HasPrefix(msg, "flag needs an argument: "):
		ue.msg = dashed(strings.TrimPrefix(msg, "flag needs an argument: ")) + " needs a value"
		if f := fs.Lookup(strings.TrimLeft(strings.TrimPrefix(msg, "flag needs an argument: "), "-")); f != nil {
			if arg, _ := placeholder(f); arg != "" {
				ue.msg += ": " + dashed(f.Name) + " " + arg
			}
		}
	case strings.HasPrefix(msg, "invalid value ") || strings.HasPrefix(msg, "invalid boolean value "):
		// invalid value "x" for flag -size: parse error
		value, rest, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(msg, "invalid boolean value "), "invalid value "), " for ")
		fname, why, _ := strings.Cut(strings.TrimPrefix(rest, "flag "), ": ")
		ue.msg = fmt.Sprintf("%s %s: %s", dashed(fname), value, why)
		if f := fs.Lookup(strings.TrimLeft(fname, "-")); f != nil {
			switch arg, _ := placeholder(f); {
			case isBool(f):
				ue.msg = fmt.Sprintf("%s takes no value (or =true, =false)", dashed(fname))
			case arg == "DURATION":
				ue.msg = fmt.Sprintf("%s %s: not a duration; use one like 90s, 10m or 1h30m", dashed(fname), value)
			case arg == "N":
				ue.msg = fmt.Sprintf("%s %s: not a number", dashed(fname), value)
			}
		}
	case strings.HasPrefix(msg, "bad flag syntax: "):
		ue.msg = fmt.Sprintf("bad flag %s: flags look like --name or --name=value", strings.TrimPrefix(msg, "bad flag syntax: "))
	default:
		ue.msg = msg
	}
	return ue
}

func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
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
