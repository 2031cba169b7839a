package cli

import (
	"bytes"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every command with a page in the help has a man page with its name,
// synopsis, description, every flag, its examples and the pages related,
// and troff reads each without a warning.
func TestManPagesStructure(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	if out, errs, code := run(t, "", "docs", "man", dir); code != 0 {
		t.Fatalf("docs man: exit %d\n%s%s", code, out, errs)
	}
	pages := readDir(t, dir)
	root := newTree(IO{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}, nil)
	root.InitDefaultHelpCmd()
	want := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		want[name] = true
		page, ok := pages[name]
		if !ok {
			t.Errorf("no man page for %q (%s)", c.CommandPath(), name)
			return
		}
		for _, s := range []string{
			".TH \"CORRAL\" \"1\" ",
			".SH NAME\n" + roffCode(strings.ReplaceAll(c.CommandPath(), " ", "-")) + ` \- ` + roffText(c.Short) + "\n",
			".SH SYNOPSIS\n\\fB" + roffCode(c.UseLine()) + "\\fR\n",
			".SH DESCRIPTION\n",
		} {
			if !strings.Contains(page, s) {
				t.Errorf("%s lacks %q:\n%s", name, s, page)
			}
		}
		c.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			_, opts, _ := strings.Cut(page, ".SH OPTIONS\n")
			if tag := ".TP\n" + optionTag(f); !strings.Contains(opts, tag) {
				t.Errorf("%s lacks --%s (%q) under OPTIONS:\n%s", name, f.Name, tag, page)
			}
		})
		if c.Example != "" {
			for line := range strings.SplitSeq(c.Example, "\n") {
				if !strings.Contains(page, "\n"+roffLine(roffCode(line))+"\n") {
					t.Errorf("%s lacks the example line %q:\n%s", name, line, page)
				}
			}
		}
		_, seeAlso, _ := strings.Cut(page, ".SH SEE ALSO\n")
		var related []*cobra.Command
		if c.HasParent() {
			related = append(related, c.Parent())
		}
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
				related = append(related, sub)
				walk(sub)
			}
		}
		for _, r := range related {
			if ref := `\fB` + roffCode(strings.ReplaceAll(r.CommandPath(), " ", "-")) + `\fR(1)`; !strings.Contains(seeAlso, ref) {
				t.Errorf("%s: SEE ALSO lacks %s:\n%s", name, ref, page)
			}
		}
	}
	walk(root)
	for name := range pages {
		if !want[name] {
			t.Errorf("%s is the page of no command with help", name)
		}
	}
	// A trace that lost its pages (an empty tree) must fail, not pass.
	if len(want) < 30 || !want["corral-fleet-join-hub.1"] {
		t.Fatalf("%d pages expected, corral-fleet-join-hub.1 among them: %v", len(want), want)
	}

	t.Run("troff", func(t *testing.T) {
		if _, err := exec.LookPath("groff"); err != nil {
			t.Skip("groff is not installed: the pages' roff is not checked")
		}
		// One groff for every page (one each took 2-3 s); only when it
		// complains, one each to name the page.
		groff := func(names ...string) ([]byte, error) {
			args := []string{"-man", "-Tutf8", "-ww", "-z"}
			for _, name := range names {
				args = append(args, filepath.Join(dir, name))
			}
			return exec.Command("groff", args...).CombinedOutput()
		}
		all, err := groff(slices.Collect(maps.Keys(pages))...)
		if err == nil && len(all) == 0 {
			return
		}
		for name := range pages {
			if out, err := groff(name); err != nil || len(out) > 0 {
				t.Errorf("groff on %s: %v\n%s", name, err, out)
			}
		}
		if !t.Failed() {
			t.Errorf("groff on every page: %v\n%s", err, all)
		}
	})
	t.Run("man", func(t *testing.T) {
		if _, err := exec.LookPath("man"); err != nil {
			t.Skip("man is not installed: the pages are not rendered")
		}
		cmd := exec.Command("man", "-l", filepath.Join(dir, "corral-wait.1"))
		// A UTF-8 locale, whatever the caller's: in C or POSIX man drops the
		// "…" of the synopsis.
		cmd.Env = append(cmd.Environ(), "MANWIDTH=200", "MANPAGER=cat", "PAGER=cat", "LC_ALL=C.UTF-8")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("man -l corral-wait.1: %v", err)
		}
		for _, s := range []string{"corral-wait - wait until the panes reach a state", "corral wait ID… --state S[,S…] [flags]", "--timeout=0s", "corral wait api web --state idle,blocked --timeout 10m", "corral(1)"} {
			if !strings.Contains(string(out), s) {
				t.Errorf("man -l corral-wait.1 lacks %q:\n%s", s, out)
			}
		}
	})
}

// optionTag is a flag's tag in a man page, as manFlags writes it.
func optionTag(f *pflag.Flag) string {
	tag := `\fB\-\-` + roffCode(f.Name) + `\fR`
	if f.Shorthand != "" && f.ShorthandDeprecated == "" {
		tag = `\fB\-` + roffCode(f.Shorthand) + `\fR, ` + tag
	}
	return tag
}

func TestRoffEscapes(t *testing.T) {
	for _, c := range []struct {
		in, text, code string
	}{
		{"plain words", "plain words", "plain words"},
		{`C:\path`, `C:\epath`, `C:\epath`},
		{".starts with a dot", `\&.starts with a dot`, `\&.starts with a dot`},
		{"'quoted", `\&'quoted`, `\&'quoted`},
		{"two\n.lines", "two\n\\&.lines", "two\n\\&.lines"},
		{"--json -h", "--json -h", `\-\-json \-h`},
		{"ID… naïve", `ID\[u2026] na\[u00EF]ve`, `ID\[u2026] na\[u00EF]ve`},
		{"a.b 'c'", "a.b 'c'", "a.b 'c'"},
	} {
		if got := roffText(c.in); got != c.text {
			t.Errorf("roffText(%q) = %q, want %q", c.in, got, c.text)
		}
		if got := roffCode(c.in); got != c.code {
			t.Errorf("roffCode(%q) = %q, want %q", c.in, got, c.code)
		}
	}
}

func TestManDate(t *testing.T) {
	for _, c := range []struct {
		epoch, want string
		fails       bool
	}{
		{epoch: "0", want: "Jan 1970"},
		{epoch: "1700000000", want: "Nov 2023"},
		{epoch: "yesterday", fails: true},
	} {
		t.Setenv("SOURCE_DATE_EPOCH", c.epoch)
		got, err := manDate()
		if c.fails != (err != nil) || got != c.want {
			t.Errorf("SOURCE_DATE_EPOCH=%s: %q, %v; want %q (fails: %v)", c.epoch, got, err, c.want, c.fails)
		}
	}
}
