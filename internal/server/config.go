package server

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/corral-dev/corral/internal/notify"
	"github.com/corral-dev/corral/internal/rules"
	"github.com/corral-dev/corral/internal/safefile"
	"github.com/corral-dev/corral/internal/tomlfile"
)

// Config is the user's config file, $XDG_CONFIG_HOME/corral/config.toml.
type Config struct {
	Notify notify.Config `toml:"notify"`
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
