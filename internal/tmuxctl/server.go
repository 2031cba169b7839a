package tmuxctl

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Server names a tmux server as tmux's own -L and -S flags do (both
// empty: the user's default server).
type Server struct{ Name, Socket string }

// Args returns the flags that name the server to tmux: ["-L", name],
// ["-S", path] or none.
func (s Server) Args() []string {
	switch {
	case s.Socket != "":
		return []string{"-S", s.Socket}
	case s.Name != "":
		return []string{"-L", s.Name}
	}
	return nil
}

// SocketPath returns the server's socket as tmux finds it: -S's path as
// is; else the first of $TMUX_TMPDIR and /tmp that exists, resolved,
// then /tmux-UID/ and the name (default "default"). $TMUX is not
// consulted: the watcher's clients run without it.
func (s Server) SocketPath() (string, error) {
	if err := s.check(); err != nil {
		return "", err
	}
	if s.Socket != "" {
		return s.Socket, nil
	}
	name := s.Name
	if name == "" {
		name = "default"
	}
	for _, dir := range []string{os.Getenv("TMUX_TMPDIR"), "/tmp"} {
		if dir == "" {
			continue
		}
		// As tmux's expand_paths: a directory that does not resolve is
		// passed over.
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, fmt.Sprintf("tmux-%d", os.Getuid()), name), nil
		}
	}
	return "", errors.New("tmux server: no socket directory: neither $TMUX_TMPDIR nor /tmp exists")
}

// String is the server in words: "default", "-L work", "-S /path".
func (s Server) String() string {
	switch {
	case s.Socket != "":
		return "-S " + s.Socket
	case s.Name != "":
		return "-L " + s.Name
	}
	return "default"
}

func (s Server) check() error {
	switch {
	case s.Name != "" && s.Socket != "":
		return fmt.Errorf("tmux server: give a socket name (-L %s) or a socket path (-S %s), not both", s.Name, s.Socket)
	case strings.ContainsRune(s.Name, '/'):
		return fmt.Errorf("tmux server: socket name %q has a '/': give a path as the socket (-S) instead", s.Name)
	}
	return nil
}

// answers reports whether a server listens on the socket: a dial, never
// a process.
func answers(path string) error {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) && (errno == syscall.ENOENT || errno == syscall.ECONNREFUSED) {
			return fmt.Errorf("no tmux server running on %s", path)
		}
		return fmt.Errorf("tmux server on %s: %w", path, err)
	}
	c.Close()
	return nil
}

// The oldest tmux watched is 3.2: the first with the control client
// flags ignore-size and pause-after and refresh-client -A and -B.
var versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^tmux (?:next-)?(\d+)\.(\d+)([a-z]?)(?:-rc\d*)?$`) })

// CheckVersion reads what tmux -V printed ("tmux 3.3a") and returns the
// version ("3.3a"), with an error for a tmux older than 3.2, which cannot
// be watched. A version it cannot read ("tmux master", "tmux openbsd-7.4":
// builds newer than any release, or the system's own) is taken as it is.
func CheckVersion(out string) (version string, err error) {
	v := strings.TrimSpace(out)
	version = strings.TrimPrefix(v, "tmux ")
	m := versionRE().FindStringSubmatch(v)
	if m == nil {
		return version, nil
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major < 3 || major == 3 && minor < 2 {
		return version, errors.New("watching tmux needs tmux 3.2 or later (control client flags ignore-size and pause-after); upgrade tmux")
	}
	return version, nil
}

// findTmux finds the tmux binary and its version ("3.3a"). It refuses a
// tmux older than 3.2 and explains how to get one.
func findTmux() (path, version string, err error) {
	path, err = exec.LookPath("tmux")
	if err != nil {
		return "", "", errors.New("tmux not found in PATH: install tmux 3.2 or later (apt-get install tmux, dnf install tmux, brew install tmux)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "-V").Output()
	if err != nil {
		return "", "", fmt.Errorf("%s -V: %v: is it tmux? install tmux 3.2 or later", path, err)
	}
	version, err = CheckVersion(string(out))
	if err != nil {
		return "", "", fmt.Errorf("%s is %s: %v", path, strings.TrimSpace(string(out)), err)
	}
	return path, version, nil
}

// env is the environment of the tmux clients: the watcher's own without
// TMUX, which would otherwise point them at the server corral runs in.
func env() []string {
	var e []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMUX=") && !strings.HasPrefix(kv, "TMUX_PANE=") {
			e = append(e, kv)
		}
	}
	return e
}

// sessionFormat is list-sessions' line: the server (its pid and start
// time, which tell a server started again on the same socket from the one
// before), the session's last activity and the session.
const sessionFormat = "#{pid}.#{start_time} #{session_activity} #{session_id}"

// parseSessions parses list-sessions' lines of sessionFormat; the
// sessions come least recently active first. Lines that do not parse are
// counted in bad.
func parseSessions(lines [][]byte) (server string, ids []string, bad int) {
	type session struct {
		id       string
		activity int64
	}
	var ss []session
	for _, l := range lines {
		f := strings.Fields(string(l))
		if len(f) != 3 || !validID([]byte(f[2]), '$') {
			bad++
			continue
		}
		activity, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			bad++
			continue
		}
		server = f[0]
		ss = append(ss, session{f[2], activity})
	}
	slices.SortStableFunc(ss, func(a, b session) int { return cmp.Compare(a.activity, b.activity) })
	for _, s := range ss {
		ids = append(ids, s.id)
	}
	return server, ids, bad
}

// listSessions runs `tmux list-sessions` once, as a process: the only way
// to learn a server's sessions without a client attached to one of them.
func listSessions(ctx context.Context, tmux string, srv Server) (server string, ids []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	args := append(srv.Args(), "list-sessions", "-F", sessionFormat)
	cmd := exec.CommandContext(ctx, tmux, args...)
	cmd.Env = env()
	// In the caller's process group: a daemon that reaps the orphans it
	// adopts (a child subreaper) leaves its own group's children alone, so
	// this exit status stays Wait's.
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) && len(out) > 0 && stderr.Len() == 0 {
		err = nil // the status was taken by another waiter; the answer is whole
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", nil, fmt.Errorf("tmux %s list-sessions: %s", srv, msg)
	}
	server, ids, _ = parseSessions(bytes.Split(bytes.TrimSpace(out), []byte("\n")))
	return server, ids, nil
}
