package doctor

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/buildinfo"
	"github.com/corral-dev/corral/internal/fleet"
)

// fake is a machine for the checks: every file, command and answer is a
// map entry; anything else is not there.
type fake struct {
	goos     string
	env      map[string]string
	files    map[string]string
	dirs     map[string]FileInfo
	path     map[string]string            // command → its path
	out      map[string]string            // "path arg" → what it prints
	runErr   map[string]error             // "path arg" → its error
	status   *api.Status                  // the daemon's; nil: none runs
	daemon   error                        // the daemon's error, when not nil
	fleetCfg *fleet.Config                // nil: in no fleet
	fleetErr error                        // fleet config error
	live     *FleetState                  // the daemon's fleet; nil: ErrNoFleet
	dial     map[string]error             // HOST:PORT → its error; missing: reachable
	notify   Notify                       // [notify]
	notifyE  error                        // the config file's error
	gemini   bool                         // corral's extension installed
	claude   func() (string, bool, error) // Claude Code's global hooks
	links    map[string]string            // RealPath
}

var self = buildinfo.Info{Version: "v1.0.0", Binary: "aaaaaaaaaaaa"}

func newFake() *fake {
	return &fake{
		goos:  "linux",
		env:   map[string]string{"TERM": "xterm-256color"},
		files: map[string]string{},
		dirs: map[string]FileInfo{
			"/home/u/.local/state/corral": {IsDir: true, UID: 1000, Mode: fs.ModeDir | 0o700},
			"/run/user/1000/corral":       {IsDir: true, UID: 1000, Mode: fs.ModeDir | 0o700},
		},
		path:   map[string]string{},
		out:    map[string]string{},
		runErr: map[string]error{},
		status: &api.Status{PID: 42, Panes: 3, Build: self, Started: "2025-01-01T00:00:00Z"},
		dial:   map[string]error{},
		claude: func() (string, bool, error) { return "/home/u/.claude/settings.json", false, nil },
		links:  map[string]string{},
	}
}

// agent puts an agent CLI on PATH that prints out for --version.
func (f *fake) agent(bin, out string) {
	p := "/usr/bin/" + bin
	f.path[bin] = p
	f.out[p+" --version"] = out
}

func (f *fake) Env() *Env {
	return &Env{
		GOOS: f.goos, GOARCH: "amd64",
		Getenv:         func(k string) string { return f.env[k] },
		StdoutTerminal: true,
		Cwd:            "/home/u/project", Home: "/home/u", UID: 1000,
		SocketPath: "/run/user/1000/corral/corral.sock", StateDir: "/home/u/.local/state/corral",
		ConfigPath: "/home/u/.config/corral/config.toml",
		Self:       self,
		LookPath: func(file string) (string, error) {
			if p, ok := f.path[file]; ok {
				return p, nil
			}
			return "", &exec.Error{Name: file, Err: exec.ErrNotFound}
		},
		Run: func(_ context.Context, _ time.Duration, argv ...string) (string, error) {
			key := strings.Join(argv, " ")
			return f.out[key], f.runErr[key]
		},
		ReadFile: func(p string) ([]byte, error) {
			if s, ok := f.files[p]; ok {
				return []byte(s), nil
			}
			return nil, fs.ErrNotExist
		},
		Lstat: func(p string) (FileInfo, error) {
			if i, ok := f.dirs[p]; ok {
				return i, nil
			}
			return FileInfo{}, fs.ErrNotExist
		},
		RealPath: func(p string) string {
			if r, ok := f.links[p]; ok {
				return r
			}
			return p
		},
		Now: func() time.Time { return time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC) },
		Daemon: func(context.Context) (api.Status, error) {
			switch {
			case f.daemon != nil:
				return api.Status{}, f.daemon
			case f.status == nil:
				return api.Status{}, ErrNoDaemon
			}
			return *f.status, nil
		},
		DaemonFleet: func(context.Context) (FleetState, error) {
			switch {
			case f.status == nil:
				return FleetState{}, ErrNoDaemon
			case f.live == nil:
				return FleetState{}, ErrNoFleet
			}
			return *f.live, nil
		},
		Dial:   func(_ context.Context, a string) error { return f.dial[a] },
		Config: func() (Notify, error) { return f.notify, f.notifyE },
		FleetConfig: func() (fleet.Config, error) {
			switch {
			case f.fleetErr != nil:
				return fleet.Config{}, f.fleetErr
			case f.fleetCfg == nil:
				return fleet.Config{}, fleet.ErrNotConfigured
			}
			return *f.fleetCfg, nil
		},
		GeminiInstalled: func(string) bool { return f.gemini },
		ClaudeGlobal:    func() (string, bool, error) { return f.claude() },
	}
}

func boolp(b bool) *bool { return &b }

func TestChecks(t *testing.T) {
	type tc struct {
		name   string
		check  string
		setup  func(f *fake)
		status Status
		found  string // words found must hold
		fix    string // words fix must hold ("" : no fix)
	}
	soon := time.Date(2025, 6, 3, 12, 0, 0, 0, time.UTC).Unix()
	creds := func(exp int64) string {
		claims := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"exp":%d,"sub":"U"}`, exp))
		return "-----BEGIN NATS USER JWT-----\neyJhbGciOiJlZDI1NTE5LW5rZXkifQ." + claims + ".c2ln\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\nSUAXXX\n------END USER NKEY SEED------\n"
	}
	member := func(f *fake) {
		f.fleetCfg = &fleet.Config{Name: "laptop", URLs: []string{"nats://hub.lan:4222", "tls://hub2.lan"}, Token: "cht_laptop_x"}
		f.live = &FleetState{Name: "laptop", Joined: true}
		f.live.Member = &struct {
			Connected bool   `json:"connected"`
			LastError string `json:"last_error"`
		}{Connected: true}
	}
	tests := []tc{
		{"linux", "system", nil, OK, "linux/amd64", ""},
		{"windows", "system", func(f *fake) { f.goos = "windows" }, Warn, "windows", "Linux or macOS"},
		{"terminal", "terminal", nil, OK, "TERM=xterm-256color, output to a terminal", ""},
		{"no TERM", "terminal", func(f *fake) { delete(f.env, "TERM") }, Warn, "TERM is not set", "export TERM=xterm-256color"},
		{"in tmux", "terminal", func(f *fake) { f.env["TMUX"] = "/tmp/tmux-1000/default,1,0" }, OK, "inside tmux", ""},

		{"state ok", "state folder", nil, OK, "(yours, mode 0700)", ""},
		{"state missing", "state folder", func(f *fake) { delete(f.dirs, "/home/u/.local/state/corral") }, OK, "not there yet", ""},
		{"state others write", "state folder", func(f *fake) {
			f.dirs["/home/u/.local/state/corral"] = FileInfo{IsDir: true, UID: 1000, Mode: fs.ModeDir | 0o777}
		}, Fail, "others can write to it (mode 0777)", "chmod 700 /home/u/.local/state/corral"},
		{"state another's", "state folder", func(f *fake) {
			f.dirs["/home/u/.local/state/corral"] = FileInfo{IsDir: true, UID: 0, Mode: fs.ModeDir | 0o700}
		}, Fail, "belongs to uid 0, not to you (uid 1000)", "CORRAL_STATE_DIR"},
		{"state link", "state folder", func(f *fake) {
			f.dirs["/home/u/.local/state/corral"] = FileInfo{IsLink: true, UID: 1000, Mode: fs.ModeSymlink | 0o777}
		}, Fail, "symbolic link", "rm /home/u/.local/state/corral"},
		{"state file", "state folder", func(f *fake) {
			f.dirs["/home/u/.local/state/corral"] = FileInfo{UID: 1000, Mode: 0o600}
		}, Fail, "not a folder", "mv /home/u/.local/state/corral"},
		{"socket ok", "socket folder", nil, OK, "/run/user/1000/corral (yours, mode 0700)", ""},
		{"socket others write", "socket folder", func(f *fake) {
			f.dirs["/run/user/1000/corral"] = FileInfo{IsDir: true, UID: 1000, Mode: fs.ModeDir | 0o1777}
		}, Fail, "others can write", "chmod 700"},
		{"CORRAL_SOCKET others write", "socket folder", func(f *fake) {
			f.env["CORRAL_SOCKET"] = "/run/user/1000/corral/corral.sock"
			f.dirs["/run/user/1000/corral"] = FileInfo{IsDir: true, UID: 1000, Mode: fs.ModeDir | 0o777}
		}, Warn, "CORRAL_SOCKET=", "private folder"},

		{"config none", "config file", nil, OK, "none; the defaults apply", ""},
		{"config there", "config file", func(f *fake) { f.files["/home/u/.config/corral/config.toml"] = "[notify]\n" }, OK, "config.toml", ""},
		{"config broken", "config file", func(f *fake) {
			f.notifyE = errors.New("config.toml:3:1: unknown key \"notify.bogus\"")
		}, Fail, "unknown key", "mv /home/u/.config/corral/config.toml"},

		{"daemon same", "daemon", nil, OK, "running (pid 42, 3 panes", ""},
		{"daemon none", "daemon", func(f *fake) { f.status = nil }, Warn, "not running", "corral serve"},
		{"daemon other build", "daemon", func(f *fake) {
			f.status.Build = buildinfo.Info{Version: "v0.9.0", Binary: "bbbbbbbbbbbb"}
		}, Warn, "another build: corral v0.9.0", "corral restart"},
		{"daemon stuck", "daemon", func(f *fake) { f.daemon = errors.New("the daemon did not answer within 2s") }, Fail, "did not answer", "corral shutdown"},

		{"tmux none", "tmux", nil, Skip, "only corral tmux watch needs it", "install tmux"},
		{"tmux none, watched", "tmux", func(f *fake) {
			f.files["/home/u/.local/state/corral/tmux.json"] = `{"version":1,"servers":[{"name":"work"}]}`
		}, Fail, "watches 1 tmux server", "install tmux 3.2"},
		{"tmux ok", "tmux", func(f *fake) { f.path["tmux"] = "/usr/bin/tmux"; f.out["/usr/bin/tmux -V"] = "tmux 3.4\n" }, OK, "3.4 at /usr/bin/tmux: control mode usable", ""},
		{"tmux old", "tmux", func(f *fake) { f.path["tmux"] = "/usr/bin/tmux"; f.out["/usr/bin/tmux -V"] = "tmux 3.1c\n" }, Warn, "3.2 or later", "install tmux 3.2"},
		{"tmux old, watched", "tmux", func(f *fake) {
			f.path["tmux"] = "/usr/bin/tmux"
			f.out["/usr/bin/tmux -V"] = "tmux 2.9\n"
			f.files["/home/u/.local/state/corral/tmux.json"] = `{"version":1,"servers":[{}]}`
		}, Fail, "3.2 or later", "install tmux"},
		{"tmux broken", "tmux", func(f *fake) {
			f.path["tmux"] = "/usr/bin/tmux"
			f.runErr["/usr/bin/tmux -V"] = errors.New("no answer within 5s")
		}, Warn, "no answer within 5s", "is it tmux?"},

		{"claude verified", "claude-code", func(f *fake) { f.agent("claude", "2.1.332 (Claude Code)\n") }, OK, "Claude Code 2.1.332 at /usr/bin/claude, the version corral verify passed", ""},
		{"claude newer", "claude-code", func(f *fake) { f.agent("claude", "2.2.0 (Claude Code)\n") }, Warn, "newer than the 2.1.332", "corral verify --agent claude-code"},
		{"claude older", "claude-code", func(f *fake) { f.agent("claude", "2.0.1 (Claude Code)\n") }, Warn, "older than the 2.1.332", "npm install -g @anthropic-ai/claude-code@2.1.332"},
		{"claude hangs", "claude-code", func(f *fake) {
			f.agent("claude", "")
			f.runErr["/usr/bin/claude --version"] = errors.New("no answer within 5s")
		}, Warn, "/usr/bin/claude --version: no answer within 5s", "run claude --version yourself"},
		{"claude prints nonsense", "claude-code", func(f *fake) { f.agent("claude", "Welcome! Log in first.\n") }, Warn, "printed no version", "npm install"},
		{"claude missing", "claude-code", nil, Skip, "claude is not on PATH", ""},
		{"codex", "codex", func(f *fake) { f.agent("codex", "codex-cli 0.171.0\n") }, OK, "Codex 0.171.0", ""},
		{"qwen", "qwen-code", func(f *fake) { f.agent("qwen", "0.15.10\n") }, OK, "corral reads its screen", ""},
		{"none at all", "agents", nil, Warn, "none of corral's known agent CLIs", "npm install -g"},

		{"claude hooks", "claude-code hooks", func(f *fake) { f.agent("claude", "2.1.332") }, OK, "--settings", ""},
		{"claude hooks, tmux watched", "claude-code hooks", func(f *fake) {
			f.agent("claude", "2.1.332")
			f.files["/home/u/.local/state/corral/tmux.json"] = `{"version":1,"servers":[{}]}`
		}, Warn, "seen by its screen only", "corral integrate claude-code --global"},
		{"claude hooks global", "claude-code hooks", func(f *fake) {
			f.agent("claude", "2.1.332")
			f.claude = func() (string, bool, error) { return "/home/u/.claude/settings.json", true, nil }
		}, OK, "in /home/u/.claude/settings.json too", ""},
		{"codex hooks", "codex hooks", func(f *fake) { f.agent("codex", "0.171.0") }, OK, "-c notify", ""},

		{"gemini extension", "gemini extension", func(f *fake) { f.agent("gemini", "0.61.0"); f.gemini = true }, OK, "/home/u/.gemini/extensions/corral", ""},
		{"gemini no extension", "gemini extension", func(f *fake) { f.agent("gemini", "0.61.0") }, Warn, "not installed", "corral integrate gemini"},
		{"gemini GEMINI_CLI_HOME", "gemini extension", func(f *fake) { f.agent("gemini", "0.61.0"); f.env["GEMINI_CLI_HOME"] = "/g" }, Warn, "/g/.gemini/extensions/corral", "corral integrate gemini"},
		{"gemini trust off", "gemini folder trust", func(f *fake) {
			f.agent("gemini", "0.61.0")
			f.files["/home/u/.gemini/settings.json"] = `{"security": {"folderTrust": {"enabled": false}}}`
		}, OK, "off", ""},
		{"gemini trust on, trusted", "gemini folder trust", func(f *fake) {
			f.agent("gemini", "0.61.0")
			f.files["/home/u/.gemini/settings.json"] = "{\n  // mine\n  \"security\": {\"folderTrust\": {\"enabled\": true}} /* on */\n}"
			f.files["/home/u/.gemini/trustedFolders.json"] = `{"/home/u": "TRUST_FOLDER"}`
		}, OK, `is trusted ("/home/u": TRUST_FOLDER`, ""},
		{"gemini trust parent", "gemini folder trust", func(f *fake) {
			f.agent("gemini", "0.61.0")
			f.files["/home/u/.gemini/settings.json"] = `{"security": {"folderTrust": {"enabled": true}}}`
			f.files["/home/u/.gemini/trustedFolders.json"] = `{"/home/u/other": "TRUST_PARENT"}`
		}, OK, "TRUST_PARENT", ""},
		{"gemini trust longest wins", "gemini folder trust", func(f *fake) {
			f.agent("gemini", "0.61.0")
			f.files["/home/u/.gemini/settings.json"] = `{"security": {"folderTrust": {"enabled": true}}}`
			f.files["/home/u/.gemini/trustedFolders.json"] = `{"/home/u": "TRUST_FOLDER", "/home/u/project": "DO_NOT_TRUST"}`
		}, Warn, "is not trusted (\"/home/u/project\": DO_NOT_TRUST", "TRUST_FOLDER"},
		{"gemini trust unknown folder", "gemini folder trust", func(f *fake) {
			f.agent("gemini", "0.61.0")
			f.files["/home/u/.gemini/settings.json"] = `{"security": {"folderTrust": {"enabled": true}}}`
			f.files["/home/u/.gemini/trustedFolders.json"] = `{"/srv": "TRUST_FOLDER", "/home/u/projects": "TRUST_FOLDER"}`
		}, Warn, "not trusted yet", `"/home/u/project": "TRUST_FOLDER"`},
		{"gemini trust by default", "gemini folder trust", func(f *fake) { f.agent("gemini", "0.61.0") }, Warn, "on by default", "folderTrust.enabled to false"},
		{"gemini trust through a link", "gemini folder trust", func(f *fake) {
			f.agent("gemini", "0.61.0")
			f.links["/home/u/project"] = "/data/project"
			f.files["/home/u/.gemini/trustedFolders.json"] = `{"/data": "TRUST_FOLDER"}`
		}, OK, "is trusted", ""},
		{"gemini trust system off", "gemini folder trust", func(f *fake) {
			f.agent("gemini", "0.61.0")
			f.files["/home/u/.gemini/settings.json"] = `{"security": {"folderTrust": {"enabled": true}}}`
			f.files["/etc/gemini-cli/settings.json"] = `{"security": {"folderTrust": {"enabled": false}}}`
		}, OK, "/etc/gemini-cli/settings.json", ""},
		{"gemini trust file broken", "gemini folder trust", func(f *fake) {
			f.agent("gemini", "0.61.0")
			f.files["/home/u/.gemini/trustedFolders.json"] = `{"/home/u": "YES"}`
		}, Fail, `trust level "YES"`, "fix /home/u/.gemini/trustedFolders.json"},

		{"desktop", "notify desktop", func(f *fake) { f.path["notify-send"] = "/usr/bin/notify-send" }, OK, "notify-send at /usr/bin/notify-send, on blocked", ""},
		{"desktop missing", "notify desktop", nil, Warn, "notify-send is not on PATH", "apt-get install libnotify-bin"},
		{"desktop off", "notify desktop", func(f *fake) { f.notify.Desktop = boolp(false) }, Skip, "desktop = false", ""},
		{"bell", "notify bell", func(f *fake) { f.notify.On = []string{"blocked", "error"} }, OK, "on blocked, error", ""},
		{"bell off", "notify bell", func(f *fake) { f.notify.Bell = boolp(false) }, Skip, "bell = false", ""},
		{"webhook", "notify webhook", func(f *fake) { f.notify.Webhook = "https://ntfy.sh/secret-topic?x=1" }, OK, "https://ntfy.sh/…", ""},
		{"command", "notify command", func(f *fake) {
			f.notify.Command = []string{"logger", "-t", "corral"}
			f.path["logger"] = "/usr/bin/logger"
		}, OK, "logger -t corral", ""},
		{"command missing", "notify command", func(f *fake) { f.notify.Command = []string{"ntfy-me"} }, Warn, "ntfy-me is not found", "fix command in [notify]"},
		{"notify, config broken", "notifications", func(f *fake) { f.notifyE = errors.New("bad") }, Skip, "broken", ""},

		{"fleet none", "fleet", nil, Skip, "not in a fleet", ""},
		{"fleet config broken", "fleet", func(f *fake) { f.fleetErr = errors.New("fleet config: not JSON") }, Fail, "not JSON", "corral fleet leave"},
		{"fleet member", "fleet", member, OK, "a member of the fleet at nats://hub.lan:4222,tls://hub2.lan; connected", ""},
		{"fleet member, no daemon", "fleet", func(f *fake) { member(f); f.status = nil }, Warn, "daemon is not running", "start the daemon"},
		{"fleet member, daemon in no fleet", "fleet", func(f *fake) { member(f); f.live = nil }, Warn, "in no fleet", "corral restart"},
		{"fleet member, disconnected", "fleet", func(f *fake) {
			member(f)
			f.live.Member.Connected = false
			f.live.Member.LastError = "authorization violation"
		}, Fail, "not connected to it: authorization violation", "log"},
		{"hub reachable", "fleet hub", member, OK, "reachable: hub.lan:4222, hub2.lan:4222", ""},
		{"hub half reachable", "fleet hub", func(f *fake) { member(f); f.dial["hub2.lan:4222"] = errors.New("connection refused") }, Warn, "not: hub2.lan:4222 (connection refused)", "corral fleet status"},
		{"hub unreachable", "fleet hub", func(f *fake) {
			member(f)
			f.dial["hub.lan:4222"] = errors.New("i/o timeout")
			f.dial["hub2.lan:4222"] = errors.New("no such host")
		}, Fail, "not reachable from here", "firewall"},
		{"hub here", "fleet hub", func(f *fake) {
			f.fleetCfg = &fleet.Config{Name: "hub", Hub: true, Listen: "0.0.0.0:7422", Token: "cat_x"}
			f.live = &FleetState{Name: "hub", Hub: true, Joined: true}
		}, OK, "reachable: 127.0.0.1:7422", ""},
		{"hub here, not listening", "fleet hub", func(f *fake) {
			f.fleetCfg = &fleet.Config{Name: "hub", Hub: true, Listen: "0.0.0.0:7422"}
			f.live = &FleetState{Name: "hub", Hub: true, Joined: true}
			f.dial["127.0.0.1:7422"] = errors.New("connection refused")
		}, Fail, "does not answer", "log"},
		{"hub here, no daemon", "fleet hub", func(f *fake) {
			f.fleetCfg = &fleet.Config{Name: "hub", Hub: true, Listen: "0.0.0.0:7422"}
			f.status = nil
			f.dial["127.0.0.1:7422"] = errors.New("connection refused")
		}, Warn, "is not running", "start the daemon"},
		{"host token", "fleet credential", member, OK, "known to the hub only", ""},
		{"fleet token", "fleet credential", func(f *fake) { member(f); f.fleetCfg.Token = "cft_x" }, OK, "the fleet token", ""},
		{"token expired", "fleet credential", func(f *fake) {
			member(f)
			f.live.Member.Connected = false
			f.live.Member.LastError = "the credential of host laptop expired at 2025-05-01T00:00:00Z"
		}, Fail, "expired", "corral fleet invite laptop"},
		{"creds good", "fleet credential", func(f *fake) {
			member(f)
			f.fleetCfg.Token, f.fleetCfg.Creds = "", "/home/u/user.creds"
			f.files["/home/u/user.creds"] = creds(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
		}, OK, "good until 2026-01-01", ""},
		{"creds soon", "fleet credential", func(f *fake) {
			member(f)
			f.fleetCfg.Token, f.fleetCfg.Creds = "", "/home/u/user.creds"
			f.files["/home/u/user.creds"] = creds(soon)
		}, Warn, "in 2 days", "new credentials"},
		{"creds expired", "fleet credential", func(f *fake) {
			member(f)
			f.fleetCfg.Token, f.fleetCfg.Creds = "", "/home/u/user.creds"
			f.files["/home/u/user.creds"] = creds(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
		}, Fail, "expired at 2025-01-01T00:00:00Z", "--creds FILE"},
		{"creds gone", "fleet credential", func(f *fake) {
			member(f)
			f.fleetCfg.Token, f.fleetCfg.Creds = "", "/home/u/user.creds"
		}, Fail, "cannot be read", "corral fleet join URL --creds FILE"},
		{"hub credentials", "fleet credentials", func(f *fake) {
			f.fleetCfg = &fleet.Config{Name: "hub", Hub: true, Listen: "127.0.0.1:7422"}
			f.live = &FleetState{Name: "hub", Hub: true, Joined: true}
			f.files["/home/u/.local/state/corral/fleet/hub.json"] = `{"hosts": [
				{"name": "a", "expires": "2025-05-01T00:00:00Z"},
				{"name": "b", "expires": "2025-06-04T12:00:00Z"},
				{"name": "c"}]}`
		}, Warn, "3 host credentials; expired: a; expiring: b in 3 days", "corral fleet invite NAME"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			if tt.setup != nil {
				tt.setup(f)
			}
			var c Check
			for _, x := range Run(context.Background(), f.Env()).Checks {
				if x.Name == tt.check {
					c = x
				}
			}
			if c.Name == "" {
				t.Fatalf("no check %q", tt.check)
			}
			if c.Status != tt.status || !strings.Contains(c.Found, tt.found) {
				t.Errorf("%s: %s %q; want %s and %q", tt.check, c.Status, c.Found, tt.status, tt.found)
			}
			switch {
			case tt.fix == "" && c.Fix != "":
				t.Errorf("%s: fix %q; want none", tt.check, c.Fix)
			case !strings.Contains(c.Fix, tt.fix):
				t.Errorf("%s: fix %q; want %q in it", tt.check, c.Fix, tt.fix)
			}
			if (c.Status == Fail || c.Status == Warn) && c.Fix == "" {
				t.Errorf("%s: %s with no fix", tt.check, c.Status)
			}
		})
	}
}
