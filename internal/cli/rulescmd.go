package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	rulesdata "github.com/corral-dev/corral/agents"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/config"
	"github.com/corral-dev/corral/internal/rules"
	"github.com/corral-dev/corral/internal/ruleswatch"
	"github.com/spf13/pflag"
)

// runRulesCheck validates every manifest in DIR (default: the user's rules
// folder, then the built-in ones) and exits 1 if any is broken.
func runRulesCheck(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print as JSON, the shape of rules list --json: {\"manifests\": [...], \"problems\": [...]}")
	return func(_ context.Context, std IO, pos []string) error {
		if len(pos) > 1 {
			return usagef("at most one folder")
		}
		type source struct {
			label string
			list  func() ([]*rules.Manifest, error)
		}
		var sources []source
		if len(pos) == 1 {
			dir := pos[0]
			info, err := os.Stat(dir)
			if err != nil {
				return fmt.Errorf("check rules %s: %w", dir, err)
			}
			if !info.IsDir() {
				// A single file.
				sources = append(sources, source{dir, func() ([]*rules.Manifest, error) {
					m, err := rules.ParseFile(dir)
					if err != nil {
						return nil, err
					}
					return []*rules.Manifest{m}, nil
				}})
			} else {
				sources = append(sources, source{dir, func() ([]*rules.Manifest, error) {
					return rules.LoadUserDir(dir)
				}})
			}
		} else {
			sources = append(sources, source{"built-in", func() ([]*rules.Manifest, error) { return rules.LoadDir(rulesdata.Rules, ".", "embedded:") }})
			if dir := rules.DefaultUserDir(); dir != "" {
				if _, err := os.Stat(dir); err == nil {
					sources = append(sources, source{dir, func() ([]*rules.Manifest, error) {
						return rules.LoadUserDir(dir)
					}})
				}
			}
		}
		out := api.Rules{Manifests: []api.Manifest{}, Problems: []string{}}
		for _, s := range sources {
			ms, err := s.list()
			for _, m := range ms {
				out.Manifests = append(out.Manifests, api.Manifest{Name: m.Name, Rules: len(m.Rules), Processes: append([]string{}, m.Processes...), Source: m.Source})
				if !*asJSON {
					fmt.Fprintf(std.Stdout, "ok      %-12s %2d rules  %s\n", m.Name, len(m.Rules), m.Source)
				}
			}
			if err != nil {
				for _, e := range flatten(err) {
					out.Problems = append(out.Problems, e.Error())
					if *asJSON {
						continue
					}
					fmt.Fprintf(std.Stdout, "BROKEN  %v\n", e)
					var re *rules.Error
					if errors.As(e, &re) && re.Snippet != "" {
						fmt.Fprintln(std.Stdout, indent(re.Snippet, "        "))
					}
				}
			}
		}
		if *asJSON {
			if err := printJSON(std, out); err != nil {
				return err
			}
		}
		if n := len(out.Problems); n > 0 {
			return &exitError{code: 1, err: fmt.Errorf("%d problem(s); fix them and run corral rules check again", n)}
		}
		return nil
	}
}

// runRulesList prints the rules in force: the running daemon's, which is
// what decides pane states (a user file that broke after the daemon read
// it stays in force there in its last good version), or, with no daemon
// running, what a daemon would load now.
func runRulesList(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print as JSON")
	return func(ctx context.Context, std IO, _ []string) error {
		var list api.Rules
		where := "in force in the running daemon"
		dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		sock, err := config.CheckSocketPath()
		if err == nil {
			err = client.New(sock).Do(dctx, "GET", "/v1/rules", nil, &list)
		}
		if err != nil {
			set, errs := loader().Load(nil)
			list = ruleswatch.Describe(set, ruleswatch.Problems(errs, "the built-in version is in force"))
			where = "no daemon running: what it would load now"
		}
		if *asJSON {
			return printJSON(std, list)
		}
		tw := tabwriter.NewWriter(std.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "AGENT\tRULES\tPROCESSES\tSOURCE")
		for _, m := range list.Manifests {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", m.Name, m.Rules, dash(strings.Join(m.Processes, ",")), m.Source)
		}
		tw.Flush()
		fmt.Fprintf(std.Stdout, "\n(%s)\n", where)
		for _, p := range list.Problems {
			fmt.Fprintf(std.Stdout, "BROKEN  %s\n", p)
		}
		fmt.Fprintf(std.Stdout, "user rules folder: %s (a NAME.toml there overrides the built-in NAME)\n", rules.DefaultUserDir())
		return nil
	}
}

// flatten splits a joined error into its parts.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n")
}
