package server

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pelletier/go-toml/v2"

	"github.com/corral-dev/corral/internal/notify"
)

// Config is the user's config file, $XDG_CONFIG_HOME/corral/config.toml.
type Config struct {
	Notify notify.Config `toml:"notify"`
}

// ConfigPath is where the config file is read from.
func ConfigPath() string {
	base := os.Getenv("XDG_CONFIG_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".config")
	}
	return filepath.Join(base, "corral", "config.toml")
}

// LoadConfig reads the config file; a missing file is the defaults. Errors
// name the file, line and column.
func LoadConfig(path string) (Config, error) {
	var c Config
	if path == "" {
		return c, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		var de *toml.DecodeError
		var se *toml.StrictMissingError
		switch {
		case errors.As(err, &se) && len(se.Errors) > 0:
			line, col := se.Errors[0].Position()
			return c, fmt.Errorf("config %s:%d:%d: unknown key %v", path, line, col, se.Errors[0].Key())
		case errors.As(err, &de):
			line, col := de.Position()
			return c, fmt.Errorf("config %s:%d:%d: %v", path, line, col, de)
		}
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	if _, err := notify.New(c.Notify); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}
