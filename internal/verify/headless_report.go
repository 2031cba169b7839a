package verify

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

func wantExit(code int) string {
	if code == -1 {
		return "non-zero"
	}
	return fmt.Sprint(code)
}

// PrintHeadless writes an agent's headless cases as a table: the expected
// outcome, the exit status and key event wanted, what corral gave, time.
func PrintHeadless(w io.Writer, r *HeadlessResult) {
	version := r.Version
	if version == "" {
		version = "(version unknown)"
	}
	fmt.Fprintf(w, "corral verify --headless: %s %s", r.Agent, version)
	if r.Pinned != "" && r.Version != r.Pinned {
		fmt.Fprintf(w, " — checked against %s", r.Pinned)
	}
	fmt.Fprint(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\texpected\texit\tkey event\tcorral gave\ttime\t")
	right := 0
	for _, c := range r.Cases {
		mark := ""
		if c.Right {
			right++
		} else {
			mark = "  ✗"
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%.1fs\t\n", c.Name, mark, c.Expect, wantExit(c.Code), clip(c.Key, 40), gave(c, 60), c.Seconds)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nright: %d/%d\n", right, len(r.Cases))
	for _, c := range r.Cases {
		if c.Right {
			continue
		}
		fmt.Fprintf(w, "\n%s: exit %d (want %s)", c.Name, c.Exit, wantExit(c.Code))
		if len(c.Missing) > 0 {
			fmt.Fprintf(w, "; lacks %q", c.Missing)
		}
		if len(c.Unwant) > 0 {
			fmt.Fprintf(w, "; has %q", c.Unwant)
		}
		fmt.Fprintf(w, "; output:\n%s\n", indent(c.Output))
	}
}

// HeadlessMatrix writes headless runs as Markdown, a table per agent.
func HeadlessMatrix(w io.Writer, results []*HeadlessResult) {
	for i, r := range results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		right := 0
		for _, c := range r.Cases {
			if c.Right {
				right++
			}
		}
		fmt.Fprintf(w, "### %s %s (headless): %d/%d right\n\n", r.Agent, r.Version, right, len(r.Cases))
		fmt.Fprintln(w, "| case | expected | exit | key event | corral gave | time | right |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
		for _, c := range r.Cases {
			mark := "right"
			if !c.Right {
				mark = "**wrong**"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.1fs | %s |\n", c.Name, c.Expect, wantExit(c.Code), cell(clip(c.Key, 50)), cell(gave(c, 70)), c.Seconds, mark)
		}
	}
}

func gave(c HeadlessCaseResult, n int) string {
	return fmt.Sprintf("exit %d: %s", c.Exit, clip(c.Got, n))
}

func clip(s string, n int) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\n", " "))
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func cell(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(s, "|", "\\|") + "`"
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
