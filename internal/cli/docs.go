package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The pages are written here rather than by cobra/doc: that package links
// a Markdown renderer (go-md2man, blackfriday) into the binary, whose
// package initialisers allocate ~210 KB in every corral process, each
// holder included, for a command run by hand once in a while.

// docsMan writes a man page per command, from the same tree as the help.
func docsMan(*pflag.FlagSet) runFunc {
	return docsInto("man", func(root *cobra.Command, dir string) error {
		date, err := manDate()
		if err != nil {
			return err
		}
		return eachPage(root, func(c *cobra.Command) error {
			name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
			return os.WriteFile(filepath.Join(dir, name), manPage(c, date), 0o644)
		})
	})
}

// docsMarkdown writes the CLI reference as Markdown, a file per command
// (docs/cli is this, committed).
func docsMarkdown(*pflag.FlagSet) runFunc {
	return docsInto("markdown", func(root *cobra.Command, dir string) error {
		return eachPage(root, func(c *cobra.Command) error {
			name := strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
			return os.WriteFile(filepath.Join(dir, name), markdownPage(c), 0o644)
		})
	})
}

func docsInto(kind string, gen func(root *cobra.Command, dir string) error) runFunc {
	return func(ctx context.Context, std IO, pos []string) error {
		cmd := commandOf(ctx)
		if len(pos) != 1 || cmd == nil {
			return usagef("need the folder to write the %s pages into", kind)
		}
		dir := pos[0]
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("make %s: %w", dir, err)
		}
		root := cmd.Root()
		root.InitDefaultHelpCmd()
		if err := gen(root, dir); err != nil {
			return fmt.Errorf("write the %s pages into %s: %w", kind, dir, err)
		}
		fmt.Fprintf(std.Stdout, "wrote the %s pages into %s\n", kind, dir)
		return nil
	}
}

// eachPage calls page for c and every command under it that has a page:
// the hidden ones and the help command have none.
func eachPage(c *cobra.Command, page func(*cobra.Command) error) error {
	for _, sub := range documented(c) {
		if err := eachPage(sub, page); err != nil {
			return err
		}
	}
	c.InitDefaultHelpFlag()
	return page(c)
}

// documented is c's subcommands that have a page, by name.
func documented(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
			out = append(out, sub)
		}
	}
	slices.SortFunc(out, func(a, b *cobra.Command) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

// markdownPage is c's page of docs/cli: the layout cobra/doc's
// GenMarkdownTree wrote, byte for byte, so the committed reference stays
// as it was.
func markdownPage(c *cobra.Command) []byte {
	var b bytes.Buffer
	name := c.CommandPath()
	b.WriteString("## " + name + "\n\n" + c.Short + "\n\n")
	if c.Long != "" {
		b.WriteString("### Synopsis\n\n" + c.Long + "\n\n")
	}
	if c.Runnable() {
		b.WriteString("```\n" + c.UseLine() + "\n```\n\n")
	}
	if c.Example != "" {
		b.WriteString("### Examples\n\n```\n" + c.Example + "\n```\n\n")
	}
	if fs := c.NonInheritedFlags(); fs.HasAvailableFlags() {
		b.WriteString("### Options\n\n```\n" + fs.FlagUsages() + "```\n\n")
	}
	if fs := c.InheritedFlags(); fs.HasAvailableFlags() {
		b.WriteString("### Options inherited from parent commands\n\n```\n" + fs.FlagUsages() + "```\n\n")
	}
	subs := documented(c)
	if c.HasParent() || len(subs) > 0 {
		b.WriteString("### SEE ALSO\n\n")
		link := func(c *cobra.Command) {
			path := c.CommandPath()
			fmt.Fprintf(&b, "* [%s](%s.md)\t - %s\n", path, strings.ReplaceAll(path, " ", "_"), c.Short)
		}
		if c.HasParent() {
			link(c.Parent())
		}
		for _, sub := range subs {
			link(sub)
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

// manDate is the month the pages carry: SOURCE_DATE_EPOCH's when it is
// set (a reproducible build), else this one.
func manDate() (string, error) {
	now := time.Now()
	if epoch := os.Getenv("SOURCE_DATE_EPOCH"); epoch != "" {
		sec, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return "", fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds: %w", epoch, err)
		}
		now = time.Unix(sec, 0).UTC()
	}
	return now.Format("Jan 2006"), nil
}

// manPage is c's man page in roff (man(7) macros): name, synopsis,
// description, options, examples and the related pages.
func manPage(c *cobra.Command, date string) []byte {
	var b bytes.Buffer
	dashed := strings.ReplaceAll(c.CommandPath(), " ", "-")
	description := c.Long
	if description == "" {
		description = c.Short
	}
	fmt.Fprintf(&b, ".TH \"CORRAL\" \"1\" \"%s\" \"corral\" \"\"\n.nh\n.ad l\n", date)
	b.WriteString(".SH NAME\n" + roffCode(dashed) + " \\- " + roffText(c.Short) + "\n")
	b.WriteString(".SH SYNOPSIS\n\\fB" + roffCode(c.UseLine()) + "\\fR\n")
	b.WriteString(".SH DESCRIPTION\n" + roffText(description) + "\n")
	if fs := c.NonInheritedFlags(); fs.HasAvailableFlags() {
		b.WriteString(".SH OPTIONS\n")
		manFlags(&b, fs)
	}
	if fs := c.InheritedFlags(); fs.HasAvailableFlags() {
		b.WriteString(".SH OPTIONS INHERITED FROM PARENT COMMANDS\n")
		manFlags(&b, fs)
	}
	if c.Example != "" {
		b.WriteString(".SH EXAMPLE\n.EX\n")
		for line := range strings.SplitSeq(c.Example, "\n") {
			b.WriteString(roffLine(roffCode(line)) + "\n")
		}
		b.WriteString(".EE\n")
	}
	subs := documented(c)
	if c.HasParent() || len(subs) > 0 {
		var refs []string
		ref := func(c *cobra.Command) {
			refs = append(refs, "\\fB"+roffCode(strings.ReplaceAll(c.CommandPath(), " ", "-"))+"\\fR(1)")
		}
		if c.HasParent() {
			ref(c.Parent())
		}
		for _, sub := range subs {
			ref(sub)
		}
		b.WriteString(".SH SEE ALSO\n" + strings.Join(refs, ",\n") + "\n")
	}
	return b.Bytes()
}

// manFlags writes one tagged paragraph a flag: its names and default as
// the tag, its usage under it (a `NAME` in the usage in bold, as pflag
// takes it for the value's name).
func manFlags(b *bytes.Buffer, fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Deprecated != "" || f.Hidden {
			return
		}
		b.WriteString(".TP\n")
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			b.WriteString("\\fB\\-" + roffCode(f.Shorthand) + "\\fR, ")
		}
		b.WriteString("\\fB\\-\\-" + roffCode(f.Name) + "\\fR")
		def := f.DefValue
		if f.Value.Type() == "string" {
			def = strconv.Quote(def)
		}
		if f.NoOptDefVal != "" {
			b.WriteString("[=" + roffCode(def) + "]\n")
		} else {
			b.WriteString("=" + roffCode(def) + "\n")
		}
		usage := roffText(f.Usage)
		for {
			i := strings.IndexByte(usage, '`')
			if i < 0 {
				break
			}
			j := strings.IndexByte(usage[i+1:], '`')
			if j < 0 {
				break
			}
			usage = usage[:i] + "\\fB" + usage[i+1:i+1+j] + "\\fR" + usage[i+2+j:]
		}
		b.WriteString(usage + "\n")
	})
}

// roffText escapes prose for roff: a backslash is printed, not an escape,
// a character beyond ASCII is named (\[u2026]: troff reads its input as
// Latin-1 unless preconv ran first), and a line that would start with a
// control character starts with a zero-width one first.
func roffText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r > unicode.MaxASCII:
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = roffLine(l)
	}
	return strings.Join(lines, "\n")
}

// roffCode is roffText for what a reader types (flags, commands,
// examples): a hyphen is an ASCII minus, so that a copied command works.
func roffCode(s string) string {
	return strings.ReplaceAll(roffText(s), "-", `\-`)
}

// roffLine keeps a line of text from being read as a request (. or ').
func roffLine(l string) string {
	if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
		return `\&` + l
	}
	return l
}
