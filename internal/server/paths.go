package server

import (
	"fmt"
	"os"
	"path/filepath"
)

// SocketPath is where the daemon listens: $CORRAL_SOCKET, or
// $XDG_RUNTIME_DIR/corral/corral.sock, or a private folder in the system's
// temporary directory.
func SocketPath() string {
	if p := os.Getenv("CORRAL_SOCKET"); p != "" {
		return p
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "corral", "corral.sock")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("corral-%d", os.Getuid()), "corral.sock")
}

// StateDir holds the event log and the daemon's log: $CORRAL_STATE_DIR, or
// $XDG_STATE_HOME/corral, or ~/.local/state/corral.
func StateDir() string {
	if d := os.Getenv("CORRAL_STATE_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "corral")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), fmt.Sprintf("corral-%d", os.Getuid()), "state")
	}
	return filepath.Join(home, ".local", "state", "corral")
}
