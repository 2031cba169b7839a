package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/buildinfo"
	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/fleet"
	"github.com/corral-dev/corral/internal/safefile"
)

// Paths are where corral keeps its things, as the caller resolves them
// (config.SocketPath, StateDir, ConfigPath).
type Paths struct {
	Socket, State, Config string
}

// Real returns an Env that reads this machine. The caller fills in
// Config (the config file's [notify], as the daemon reads it),
// StdoutTerminal, and Self when its version is set at build time.
func Real(p Paths) *Env {
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	c := client.New(p.Socket)
	c.Timeout = DaemonTimeout
	return &Env{
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
		Getenv: os.Getenv,
		Cwd:    cwd, Home: home, UID: os.Getuid(),
		SocketPath: p.Socket, StateDir: p.State, ConfigPath: p.Config,
		Self:     buildinfo.Self(),
		LookPath: exec.LookPath,
		Run:      runCommand,
		ReadFile: readFile,
		Lstat:    lstat,
		RealPath: func(p string) string {
			if r, err := filepath.EvalSymlinks(p); err == nil {
				return r
			}
			return p
		},
		Now: time.Now,
		Daemon: func(ctx context.Context) (api.Status, error) {
			var st api.Status
			err := c.Do(ctx, "GET", "/v1/status", nil, &st)
			if errors.Is(err, client.ErrNoDaemon) {
				return st, ErrNoDaemon
			}
			return st, err
		},
		DaemonFleet: func(ctx context.Context) (FleetState, error) {
			var st FleetState
			err := c.Do(ctx, "GET", "/v1/fleet/status", nil, &st)
			var ce *client.Error
			switch {
			case errors.Is(err, client.ErrNoDaemon):
				return st, ErrNoDaemon
			case errors.As(err, &ce) && ce.Code() == "no_fleet":
				return st, ErrNoFleet
			}
			return st, err
		},
		Dial: func(ctx context.Context, address string) error {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "tcp", address)
			if err != nil {
				return err
			}
			return conn.Close()
		},
		Config:          func() (Notify, error) { return Notify{}, nil },
		FleetConfig:     func() (fleet.Config, error) { return fleet.LoadConfig(p.State) },
		GeminiInstalled: agents.GeminiInstalled,
		ClaudeGlobal: func() (string, bool, error) {
			path, err := agents.ClaudeSettingsPath(os.Environ())
			if err != nil {
				return "", false, err
			}
			return path, agents.ClaudeGlobalInstalled(path), nil
		},
	}
}

// maxRead bounds every file the checks read (settings, configs) and what
// a command may print.
const maxRead = 1 << 20

// readFile reads a file the checks look at: regular, bounded, opened
// without blocking (a FIFO or a device is refused, never waited on).
func readFile(path string) ([]byte, error) { return safefile.Read(path, maxRead) }

func lstat(path string) (FileInfo, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return FileInfo{}, err
	}
	fi := FileInfo{IsDir: info.IsDir(), IsLink: info.Mode()&os.ModeSymlink != 0, UID: -1, Mode: info.Mode()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		fi.UID = int(st.Uid)
	}
	return fi, nil
}

// capped keeps the first maxRead bytes written to it and drops the rest.
type capped struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := maxRead - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// runCommand runs argv the way a version probe must: stdin from
// /dev/null, in a session of its own so that it has no terminal to
// prompt on, NO_COLOR set, and killed with everything it started once
// timeout has passed. Its stdout and stderr are returned together.
func runCommand(ctx context.Context, timeout time.Duration, argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = nil // /dev/null
	var out capped
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error {
		// The session's process group: a node launcher's children too.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	// A child that keeps the output pipes open must not keep Wait waiting.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return out.String(), fmt.Errorf("no answer within %v", timeout)
	}
	if err != nil {
		return out.String(), err
	}
	return out.String(), nil
}
