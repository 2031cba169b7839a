package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPruneAfterConfig(t *testing.T) {
	for _, c := range []struct {
		text string
		want time.Duration
		err  string
	}{
		{"", 0, ""},
		{"[panes]\nprune_after = \"24h\"\n", 24 * time.Hour, ""},
		{"[panes]\nprune_after = \"0\"\n", 0, ""},
		{"[panes]\nprune_after = \"soon\"\n", 0, "not a duration"},
		{"[panes]\nprune_after = \"-1h\"\n", 0, "not a duration"},
	} {
		path := filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(path, []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(path)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want %q", c.text, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.text, err)
		case c.err == "" && cfg.Panes.PruneAfter.D() != c.want:
			t.Errorf("%q: prune_after %v, want %v", c.text, cfg.Panes.PruneAfter.D(), c.want)
		}
	}
}
