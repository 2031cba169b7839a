// Package config is where corral keeps its things and what the user
// configured: the daemon's socket and state folders (checked private), and
// config.toml.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
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

// StateDir holds the daemon's state (its log, the event log, the pane
// table, held jobs, the fleet's config: docs/configuration.md lists it):
// $CORRAL_STATE_DIR, or $XDG_STATE_HOME/corral, or ~/.local/state/corral.
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

// CheckStateDir returns StateDir after checking it as CheckPrivateDir
// does (made private if missing; refused if it is a link, another user's,
// or writable by others), and, for the fallback in the temporary folder,
// the folder above it too. Whoever controls the state folder controls what
// the daemon reads at start: the fleet's hub (fleet/config.json), the
// panes corral restore runs (panes.json), the watched tmux servers.
func CheckStateDir() (string, error) {
	dir := StateDir()
	var dirs []string
	if os.Getenv("CORRAL_STATE_DIR") == "" && os.Getenv("XDG_STATE_HOME") == "" {
		if _, err := os.UserHomeDir(); err != nil {
			dirs = append(dirs, filepath.Dir(dir)) // the temporary folder's corral-UID
		}
	}
	dirs = append(dirs, dir)
	for _, d := range dirs {
		if err := checkPrivate(d); err != nil {
			return dir, fmt.Errorf("refusing the state folder %s: %v; another user could plant what the daemon reads there (its fleet hub, the panes corral restore runs). Remove it, or set XDG_STATE_HOME or CORRAL_STATE_DIR to a private place", d, err)
		}
	}
	return dir, nil
}

// CheckSocketPath returns SocketPath after checking the folder corral
// chose for it: made private if missing, and refused if it is not a real
// folder, another user owns it, or others can write to it. Whoever
// controls that folder can swap in their own socket and receive every
// secret sent over it (environment values, hook tokens). A path the user
// chose with CORRAL_SOCKET is theirs to answer for.
func CheckSocketPath() (string, error) {
	path := SocketPath()
	if os.Getenv("CORRAL_SOCKET") != "" {
		return path, nil
	}
	return path, CheckPrivateDir(filepath.Dir(path))
}

// CheckPrivateDir makes dir (mode 0700) when missing and refuses one that
// is a symbolic link or not a folder, that another user owns, or that
// group or others can write to, as tmux does for its socket folder.
func CheckPrivateDir(dir string) error {
	if err := checkPrivate(dir); err != nil {
		return fmt.Errorf("refusing the socket folder %s: %v; another user could put their own socket there. Remove it, or set XDG_RUNTIME_DIR or CORRAL_SOCKET to a private place", dir, err)
	}
	return nil
}

// checkPrivate makes dir (mode 0700, with its parents) when missing and
// says what is wrong with it otherwise.
func checkPrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return CheckOwnedDir(dir)
}

// CheckOwnedDir says what is wrong with dir as a folder of the user's:
// a link or not a folder, another user's, or writable by others.
func CheckOwnedDir(dir string) error {
	info, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	switch {
	case !info.IsDir():
		err = errors.New("it is not a folder (a symbolic link?)")
	case !ok:
		err = errors.New("its owner cannot be read")
	case int(st.Uid) != os.Getuid():
		err = fmt.Errorf("it belongs to uid %d, not to you (uid %d)", st.Uid, os.Getuid())
	case info.Mode().Perm()&0o022 != 0:
		err = fmt.Errorf("others can write to it (mode %v)", info.Mode().Perm())
	}
	return err
}
