package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// docsMan writes a man page per command, from the same tree as the help.
func docsMan(*pflag.FlagSet) runFunc {
	return docsInto("man", func(root *cobra.Command, dir string) error {
		return doc.GenManTree(root, &doc.GenManHeader{Title: "CORRAL", Section: "1", Source: "corral"}, dir)
	})
}

// docsMarkdown writes the CLI reference as Markdown, a file per command
// (docs/cli is this, committed).
func docsMarkdown(*pflag.FlagSet) runFunc {
	return docsInto("markdown", doc.GenMarkdownTree)
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
		if err := gen(cmd.Root(), dir); err != nil {
			return fmt.Errorf("write the %s pages into %s: %w", kind, dir, err)
		}
		fmt.Fprintf(std.Stdout, "wrote the %s pages into %s\n", kind, dir)
		return nil
	}
}
