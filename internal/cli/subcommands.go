package cli

import (
	"context"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// subcommands returns the run function of a command whose work is done by
// its subcommands (rows named "PARENT SUB" in the commands table): it runs
// only when none was named.
func subcommands(parent string) func(*pflag.FlagSet) runFunc {
	return raw(func(_ context.Context, _ IO, args []string) error {
		list := strings.Join(subcommandNames(parent), ", ")
		if len(args) == 0 {
			return usagef("say which: %s", list)
		}
		if near := closest(args[0], subcommandNames(parent)); near != "" {
			return usagef("unknown %s command %q; did you mean %s %s?", parent, args[0], parent, near)
		}
		return usagef("unknown %s command %q; use %s", parent, args[0], list)
	})
}

// subcommandNames returns the names of a command's subcommands, sorted
// (none: it has none).
func subcommandNames(parent string) []string {
	var names []string
	for _, c := range commands {
		if sub, ok := strings.CutPrefix(c.name, parent+" "); ok {
			names = append(names, sub)
		}
	}
	sort.Strings(names)
	return names
}
