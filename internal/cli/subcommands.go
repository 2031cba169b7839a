package cli

import (
	"context"
	"errors"
	"sort"
	"strings"
)

// subcommands returns the run function of a command whose work is done by
// its subcommands: rows named "PARENT SUB" in the commands table.
func subcommands(parent string) func(ctx context.Context, std IO, args []string) error {
	return func(ctx context.Context, std IO, args []string) error {
		list := strings.Join(subcommandNames(parent), ", ")
		if len(args) == 0 {
			return usagef("say which: %s", list)
		}
		switch args[0] {
		case "-h", "--help", "-help":
			c, _ := lookup(parent)
			return printPage(ctx, std.Stdout, c)
		case probeArg:
			return &probed{newFlags(parent, std)}
		}
		c, ok := lookup(parent + " " + args[0])
		if !ok {
			return usagef("unknown %s command %q; use %s", parent, args[0], list)
		}
		err := c.run(ctx, std, args[1:])
		var ue *usageError
		if errors.As(err, &ue) && ue.cmd == "" {
			ue.cmd = c.name // its own synopsis, not the parent's
		}
		return err
	}
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
