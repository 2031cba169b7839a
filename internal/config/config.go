package config

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/corral-dev/corral/internal/notify"
	"github.com/corral-dev/corral/internal/rules"
	"github.com/corral-dev/corral/internal/safefile"
	"github.com/corral-dev/corral/internal/tomlfile"
)

// Config is the user's config file, $XDG_CONFIG_HOME/corral/config.toml.
type Config struct {
	Notify notify.Config `toml:"notify"`
	Panes  PanesConfig   `toml:"panes"`
}

// PanesConfig is the [panes] table.
type PanesConfig struct {
	// PruneAfter removes panes and jobs this long after they ended
	// ("24h"; "0", the default, never).
	PruneAfter Duration `toml:"prune_after"`
	// Policy is a policy file (as for corral exec) deciding every new
	// pane's permission requests unless corral run names another; a
	// relative path is relative to the config folder.
	Policy string `toml:"policy"`
	// Worktrees is the folder for `corral run --worktree`, beside the
	// repository: {repo} is the repository folder's name (default
	// "{repo}.worktrees").
	Worktrees string `toml:"worktrees"`
}

// Duration is a duration written as a string ("90s", "24h").
type Duration time.Duration

// D is the duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalText reads "24h", "90s" or "0".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil || v < 0 {
		return fmt.Errorf("%q is not a duration like 24h, 90m or 0 (never)", b)
	}
	*d = Duration(v)
	return nil
}

// ConfigPath is where the config file is read from: beside the user's
// rules folder, in corral's config folder.
func ConfigPath() string {
	dir := rules.ConfigDir()
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "config.toml")
}

// MaxConfigBytes bounds config.toml.
const MaxConfigBytes = 1 << 20

// LoadConfig reads the config file; a missing file is the defaults. Errors
// name the file, line and column.
func LoadConfig(path string) (Config, error) {
	var c Config
	if path == "" {
		return c, nil
	}
	data, err := safefile.Read(path, MaxConfigBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	if err := tomlfile.Decode("config", path, data, &c, ""); err != nil {
		return c, err
	}
	if _, err := notify.New(c.Notify); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}
