package doctor

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/fleet"
	"github.com/corral-dev/corral/internal/tmuxctl"
)

// systemChecks: the operating system and the terminal.
func systemChecks(_ context.Context, e *Env) []Check {
	sys := Check{Name: "system", Status: OK, Found: e.GOOS + "/" + e.GOARCH}
	if e.GOOS != "linux" && e.GOOS != "darwin" {
		sys.Status = Warn
		sys.Found += ": corral is built and tested on Linux and macOS only"
		sys.Fix = "run corral on Linux or macOS"
	}

	term := Check{Name: "terminal", Status: OK}
	t := e.Getenv("TERM")
	var parts []string
	if t == "" {
		parts = append(parts, "TERM is not set")
	} else {
		parts = append(parts, "TERM="+t)
	}
	if e.StdoutTerminal {
		parts = append(parts, "output to a terminal")
	} else {
		parts = append(parts, "output not to a terminal (piped or redirected)")
	}
	if e.Getenv("TMUX") != "" {
		parts = append(parts, "inside tmux")
	}
	term.Found = strings.Join(parts, ", ")
	if (t == "" || t == "dumb") && e.StdoutTerminal {
		term.Status = Warn
		term.Fix = "corral attach and the terminal board need a terminal that knows xterm's sequences (panes run with TERM=xterm-256color): run corral in a terminal emulator, or export TERM=xterm-256color if yours is one"
	}
	return []Check{sys, term}
}

// maxSocketPath is what a unix socket's path may hold on this system
// (sun_path less its terminating NUL).
func maxSocketPath(goos string) int {
	if goos == "linux" {
		return 107
	}
	return 103
}

// holderSocketExtra is what a holder socket's path adds to the state
// folder's: "/holders/" + a five-letter pane id + ".sock".
const holderSocketExtra = len("/holders/k3f9q.sock")

// folderChecks: the state folder and the socket's folder must be the
// user's own and private (server.CheckStateDir and CheckSocketPath refuse
// them otherwise), and short enough for the sockets in them.
func folderChecks(_ context.Context, e *Env) []Check {
	state := privateDir(e, "state folder", e.StateDir, "set XDG_STATE_HOME or CORRAL_STATE_DIR to a private folder of yours")
	limit := maxSocketPath(e.GOOS)
	if state.Status == OK && len(e.StateDir)+holderSocketExtra > limit {
		state.Status = Fail
		state.Found += fmt.Sprintf("; too long: the panes' holder sockets in it (%s/holders/ID.sock) would be longer than the %d bytes a unix socket's path may have", e.StateDir, limit)
		state.Fix = "set CORRAL_STATE_DIR to a shorter folder of yours"
	}

	fromEnv := e.Getenv("CORRAL_SOCKET") != ""
	sock := privateDir(e, "socket folder", filepath.Dir(e.SocketPath), "set XDG_RUNTIME_DIR or CORRAL_SOCKET to a private place")
	if fromEnv {
		// A path the user chose is theirs to answer for: corral does not
		// refuse it, so neither is it a failure here.
		sock.Found = "CORRAL_SOCKET=" + e.SocketPath + "; its folder " + sock.Found
		if sock.Status == Fail {
			sock.Status = Warn
			sock.Fix = "corral uses the socket CORRAL_SOCKET names as it is; point it into a private folder of yours"
		}
	}
	if sock.Status != Fail && len(e.SocketPath) > limit {
		sock.Status = Fail
		sock.Found += fmt.Sprintf("; the socket's path %s is %d bytes, longer than the %d a unix socket's path may have", e.SocketPath, len(e.SocketPath), limit)
		sock.Fix = "set CORRAL_SOCKET to a shorter path in a private folder of yours (or XDG_RUNTIME_DIR to a shorter folder)"
	}
	return []Check{state, sock}
}

// privateDir checks dir as server.checkOwnedDir does: a real folder, the
// user's, that group and others cannot write to. A missing one is fine:
// corral makes it private when it first needs it.
func privateDir(e *Env, name, dir, elsewhere string) Check {
	c := Check{Name: name, Status: Fail}
	info, err := e.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.Status = OK
		c.Found = dir + ": not there yet; corral makes it (mode 0700) when it first needs it"
	case err != nil:
		c.Found = fmt.Sprintf("%s: cannot be read: %v", dir, err)
		c.Fix = "make the folders above it readable to you, or " + elsewhere
	case info.IsLink:
		c.Found = dir + " is a symbolic link; corral refuses it (another user could point it elsewhere)"
		c.Fix = fmt.Sprintf("remove the link (rm %s): corral makes a private folder there; or %s", shellQuote(dir), elsewhere)
	case !info.IsDir:
		c.Found = dir + " is not a folder; corral refuses it"
		c.Fix = fmt.Sprintf("move it away (mv %s %s.old), or %s", shellQuote(dir), shellQuote(dir), elsewhere)
	case info.UID != e.UID:
		c.Found = fmt.Sprintf("%s belongs to uid %d, not to you (uid %d); corral refuses it", dir, info.UID, e.UID)
		c.Fix = "have its owner (or root) remove it, or " + elsewhere
	case info.Mode.Perm()&0o022 != 0:
		c.Found = fmt.Sprintf("%s: others can write to it (mode %04o); corral refuses it", dir, info.Mode.Perm())
		c.Fix = fmt.Sprintf("chmod 700 %s, and look at what is in it (another user could have put files there)", shellQuote(dir))
	default:
		c.Status = OK
		c.Found = fmt.Sprintf("%s (yours, mode %04o)", dir, info.Mode.Perm())
	}
	return c
}

// configCheck: the config file, which the daemon refuses to start with
// when it is broken.
func configCheck(_ context.Context, e *Env) []Check {
	c := Check{Name: "config file", Status: OK}
	if e.ConfigPath == "" {
		c.Status = Skip
		c.Found = "no home folder, so no config file is read"
		return []Check{c}
	}
	if _, err := e.Config(); err != nil {
		c.Status = Fail
		c.Found = err.Error()
		c.Fix = "fix the file where the error says (the daemon will not start with it), or move it away: mv " + shellQuote(e.ConfigPath) + " " + shellQuote(e.ConfigPath+".old")
		return []Check{c}
	}
	if _, err := e.ReadFile(e.ConfigPath); errors.Is(err, fs.ErrNotExist) {
		c.Found = e.ConfigPath + ": none; the defaults apply"
	} else {
		c.Found = e.ConfigPath
	}
	return []Check{c}
}

// daemonCheck: a daemon answering on the socket, and its build.
func daemonCheck(ctx context.Context, e *Env) []Check {
	c := Check{Name: "daemon"}
	dctx, cancel := context.WithTimeout(ctx, DaemonTimeout)
	defer cancel()
	st, err := e.Daemon(dctx)
	switch {
	case errors.Is(err, ErrNoDaemon):
		c.Status = Warn
		c.Found = "not running (nothing answers on " + e.SocketPath + ")"
		c.Fix = "nothing to do if you have not used corral yet: commands that need it start it (corral ls does); corral serve runs it in the foreground and shows why it would not start"
	case err != nil:
		c.Status = Fail
		c.Found = fmt.Sprintf("something is on %s but did not answer as a daemon within %v: %v", e.SocketPath, DaemonTimeout, err)
		c.Fix = "corral shutdown stops a stuck daemon (and its panes); its log is " + filepath.Join(e.StateDir, "daemon.log")
	case !e.Self.Same(st.Build):
		c.Status = Warn
		c.Found = fmt.Sprintf("running (pid %d, %d panes) another build: %s; this binary is %s", st.PID, st.Panes, st.Build, e.Self)
		c.Fix = "corral restart hands its panes over to a daemon of this binary (they keep running)"
	default:
		c.Status = OK
		c.Found = fmt.Sprintf("running (pid %d, %d panes, since %s), the same build as this binary (%s)", st.PID, st.Panes, st.Started, st.Build.Version)
	}
	return []Check{c}
}

// tmuxChecks: tmux on PATH, at 3.2 or later (control mode, for corral
// tmux watch). Without a watched server it is optional.
func tmuxChecks(ctx context.Context, e *Env) []Check {
	c := Check{Name: "tmux"}
	watched := watchedTmux(e)
	needed := Warn
	if watched > 0 {
		needed = Fail
	}
	install := "install tmux 3.2 or later (apt-get install tmux, dnf install tmux, brew install tmux)"
	path, err := e.LookPath("tmux")
	if err != nil {
		c.Status = Skip
		c.Found = "not on PATH; only corral tmux watch needs it"
		if watched > 0 {
			c.Status = Fail
			c.Found = fmt.Sprintf("not on PATH, and the daemon watches %s (corral tmux ls)", plural(watched, "tmux server"))
		}
		c.Fix = install
		return []Check{c}
	}
	out, err := e.Run(ctx, CommandTimeout, path, "-V")
	if err != nil {
		c.Status = needed
		c.Found = fmt.Sprintf("%s -V: %v", path, err)
		c.Fix = "is it tmux? " + install
		return []Check{c}
	}
	version, err := tmuxctl.CheckVersion(firstLine(out))
	if err != nil {
		c.Status = needed
		c.Found = fmt.Sprintf("%s at %s: %v", version, path, err)
		c.Fix = install
		return []Check{c}
	}
	c.Status = OK
	c.Found = fmt.Sprintf("%s at %s: control mode usable (corral tmux watch)", version, path)
	if watched > 0 {
		c.Found += fmt.Sprintf("; %s watched", plural(watched, "server"))
	}
	return []Check{c}
}

// watchedTmux counts the tmux servers the state folder's tmux.json says
// the daemon watches (0 when it cannot tell).
func watchedTmux(e *Env) int {
	b, err := e.ReadFile(filepath.Join(e.StateDir, "tmux.json"))
	if err != nil {
		return 0
	}
	var f struct {
		Servers []json.RawMessage `json:"servers"`
	}
	if json.Unmarshal(b, &f) != nil {
		return 0
	}
	return len(f.Servers)
}

// notifyChecks: the backends [notify] turns on, and what each needs
// (internal/notify: notify-send for the desktop, the user's command).
func notifyChecks(_ context.Context, e *Env) []Check {
	n, err := e.Config()
	if err != nil {
		return []Check{{Name: "notifications", Status: Skip, Found: "the config file is broken (above)"}}
	}
	on := "blocked"
	if len(n.On) > 0 {
		on = strings.Join(n.On, ", ")
	}
	where := "the config file's [notify]"
	if e.ConfigPath != "" {
		where = "[notify] in " + e.ConfigPath
	}
	var out []Check

	desktop := Check{Name: "notify desktop", Status: OK}
	switch path, err := e.LookPath("notify-send"); {
	case n.Desktop != nil && !*n.Desktop:
		desktop.Status = Skip
		desktop.Found = "off (desktop = false)"
	case err == nil:
		desktop.Found = fmt.Sprintf("notify-send at %s, on %s", path, on)
	case e.GOOS == "darwin":
		desktop.Status = Warn
		desktop.Found = "corral sends desktop notifications with notify-send, which macOS lacks"
		desktop.Fix = fmt.Sprintf(`set command = ["terminal-notifier", "-title", "corral", "-message"] (brew install terminal-notifier) in %s, or desktop = false there`, where)
	default:
		desktop.Status = Warn
		desktop.Found = "notify-send is not on PATH: no desktop notifications"
		desktop.Fix = fmt.Sprintf("install it (apt-get install libnotify-bin, dnf install libnotify), or set desktop = false in %s", where)
	}
	out = append(out, desktop)

	bell := Check{Name: "notify bell", Status: OK, Found: "BEL and OSC 9/777 to attached terminals, on " + on}
	if n.Bell != nil && !*n.Bell {
		bell.Status, bell.Found = Skip, "off (bell = false)"
	}
	out = append(out, bell)

	if n.Webhook != "" {
		w := Check{Name: "notify webhook", Status: OK, Found: "POST to " + redactURL(n.Webhook)}
		out = append(out, w)
	}
	if len(n.Command) > 0 {
		cmd := Check{Name: "notify command"}
		if path, err := e.LookPath(n.Command[0]); err != nil {
			cmd.Status = Warn
			cmd.Found = fmt.Sprintf("%s is not found (%v): its notifications fail", n.Command[0], err)
			cmd.Fix = "install it, or fix command in " + where
		} else {
			cmd.Status = OK
			cmd.Found = fmt.Sprintf("%s (%s)", strings.Join(n.Command, " "), path)
		}
		out = append(out, cmd)
	}
	return out
}

// redactURL keeps a webhook's scheme and host: its path or query may be
// a secret (an ntfy topic, a token).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "a webhook"
	}
	out := u.Scheme + "://" + u.Host
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		out += "/…"
	}
	return out
}

// credentialSoon is how early an expiring credential is warned about.
const credentialSoon = 7 * 24 * time.Hour

// fleetChecks: in a fleet or not, the hub reachable, the credential's
// expiry when it can be known here.
func fleetChecks(ctx context.Context, e *Env) []Check {
	cfg, err := e.FleetConfig()
	if errors.Is(err, fleet.ErrNotConfigured) {
		return []Check{{Name: "fleet", Status: Skip, Found: "not in a fleet (corral fleet init starts one, corral fleet join joins one)"}}
	}
	if err != nil {
		return []Check{{Name: "fleet", Status: Fail, Found: err.Error(),
			Fix: "corral fleet leave removes the fleet config; then corral fleet join (or init) again"}}
	}
	dctx, cancel := context.WithTimeout(ctx, DaemonTimeout)
	defer cancel()
	live, liveErr := e.DaemonFleet(dctx)

	member := Check{Name: "fleet", Status: OK}
	if cfg.Hub {
		member.Found = fmt.Sprintf("this host is %s, the hub, listening on %s", cfg.Name, cfg.Listen)
	} else {
		member.Found = fmt.Sprintf("this host is %s, a member of the fleet at %s", cfg.Name, strings.Join(cfg.URLs, ","))
	}
	switch {
	case errors.Is(liveErr, ErrNoDaemon):
		member.Status = Warn
		member.Found += "; the daemon is not running, so this host is not in the fleet now"
		member.Fix = "start the daemon (corral ls does): it joins the fleet at its start"
	case errors.Is(liveErr, ErrNoFleet):
		member.Status = Warn
		member.Found += "; but the running daemon is in no fleet: it started before the config was written, or could not start the fleet"
		member.Fix = "corral restart makes a daemon read the config again (the panes keep running); its log (" + filepath.Join(e.StateDir, "daemon.log") + ") says why the fleet did not start"
	case liveErr != nil:
		member.Status = Warn
		member.Found += fmt.Sprintf("; the daemon did not say how its fleet is: %v", liveErr)
		member.Fix = "corral fleet status asks it again; its log is " + filepath.Join(e.StateDir, "daemon.log")
	case !live.Joined || live.Member != nil && !live.Member.Connected:
		member.Status = Fail
		member.Found += "; the daemon is not connected to it"
		if live.Member != nil && live.Member.LastError != "" {
			member.Found += ": " + live.Member.LastError
		}
		member.Fix = "the daemon keeps trying; corral fleet status shows the hosts, its log (" + filepath.Join(e.StateDir, "daemon.log") + ") says why it cannot connect"
	default:
		member.Found += "; connected"
	}
	out := []Check{member}
	out = append(out, hubChecks(ctx, e, cfg, live, liveErr)...)
	out = append(out, credentialChecks(e, cfg, live, liveErr)...)
	return out
}

// hubChecks dials the fleet's servers: a short TCP connection each, which
// says whether the hub can be reached from here, not whether it accepts
// this host.
func hubChecks(ctx context.Context, e *Env, cfg fleet.Config, live FleetState, liveErr error) []Check {
	c := Check{Name: "fleet hub"}
	var addrs []string
	if cfg.Hub {
		addrs = []string{dialable(cfg.Listen)}
	} else {
		for _, u := range cfg.URLs {
			addrs = append(addrs, hostPort(u))
		}
	}
	var reached, failed []string
	for _, a := range addrs {
		if a == "" {
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, DialTimeout)
		err := e.Dial(dctx, a)
		cancel()
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s (%v)", a, err))
		} else {
			reached = append(reached, a)
		}
	}
	switch {
	case len(addrs) == 0:
		c.Status = Fail
		c.Found = "the fleet config names no server to connect to"
		c.Fix = "corral fleet leave, then corral fleet join nats://HUB:PORT --token TOKEN"
	case len(failed) == 0:
		c.Status = OK
		c.Found = "reachable: " + strings.Join(reached, ", ")
	case cfg.Hub && errors.Is(liveErr, ErrNoDaemon):
		c.Status = Warn
		c.Found = "not listening: " + strings.Join(failed, "; ") + "; this host's daemon, which runs it, is not running"
		c.Fix = "start the daemon (corral ls does)"
	case cfg.Hub && errors.Is(liveErr, ErrNoFleet):
		c.Status = Warn
		c.Found = "not listening: " + strings.Join(failed, "; ") + "; this host's daemon, which runs it, is in no fleet (above)"
		c.Fix = "corral restart makes a daemon read the fleet config again"
	case cfg.Hub:
		c.Status = Fail
		c.Found = "the hub this daemon runs does not answer: " + strings.Join(failed, "; ")
		c.Fix = "its log (" + filepath.Join(e.StateDir, "daemon.log") + ") says why; corral fleet init --listen HOST:PORT starts it again on another address"
	case len(reached) > 0:
		c.Status = Warn
		c.Found = "reachable: " + strings.Join(reached, ", ") + "; not: " + strings.Join(failed, "; ")
		c.Fix = "check the servers that do not answer (on them: corral fleet status), or leave them out: corral fleet leave, then join again with the others"
	default:
		c.Status = Fail
		c.Found = "not reachable from here: " + strings.Join(failed, "; ")
		c.Fix = "check that the hub's daemon runs (corral fleet status on it), that a firewall lets the port through, and the address (corral fleet leave, then corral fleet join with the right one)"
	}
	return []Check{c}
}

// hostPort is the HOST:PORT of a NATS server's URL (nats://, tls://, or
// a bare HOST:PORT; 4222 when the URL names no port).
func hostPort(s string) string {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		s = "nats://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = "4222"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// dialable is where to dial a listen address from this machine: the
// unspecified address (0.0.0.0, ::, none) by loopback.
func dialable(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// credentialChecks says what can be known here of the fleet credential:
// a NATS credentials file carries its expiry, the hub keeps its hosts'
// (fleet/hub.json); a member's host token has its expiry on the hub only.
func credentialChecks(e *Env, cfg fleet.Config, live FleetState, liveErr error) []Check {
	c := Check{Name: "fleet credential", Status: OK}
	now := e.Now()
	if liveErr == nil && live.Member != nil && strings.Contains(strings.ToLower(live.Member.LastError), "expired") {
		c.Status = Fail
		c.Found = "the fleet refused this host's credential: " + live.Member.LastError
		c.Fix = "on the hub, corral fleet invite " + cfg.Name + " --expires 720h makes a new one; then corral fleet leave and join with it here"
		return []Check{c}
	}
	switch {
	case cfg.Hub:
		return hubCredentials(e, now)
	case cfg.Creds != "":
		b, err := e.ReadFile(cfg.Creds)
		if err != nil {
			c.Status = Fail
			c.Found = fmt.Sprintf("the credentials file %s cannot be read: %v", cfg.Creds, err)
			c.Fix = "put it back, or join again with another: corral fleet leave, then corral fleet join URL --creds FILE"
			return []Check{c}
		}
		exp, ok := credsExpiry(b)
		switch {
		case !ok:
			c.Found = "the credentials file " + cfg.Creds + " (no expiry in it)"
		case exp.IsZero():
			c.Found = "the credentials file " + cfg.Creds + ": does not expire"
		case now.After(exp):
			c.Status = Fail
			c.Found = fmt.Sprintf("the credentials file %s expired at %s", cfg.Creds, exp.Format(time.RFC3339))
			c.Fix = "ask the fleet's operator for new credentials, then corral fleet leave and corral fleet join URL --creds FILE"
		case exp.Sub(now) < credentialSoon:
			c.Status = Warn
			c.Found = fmt.Sprintf("the credentials file %s expires at %s, in %s", cfg.Creds, exp.Format(time.RFC3339), roughly(exp.Sub(now)))
			c.Fix = "ask the fleet's operator for new credentials before then, and join again with them"
		default:
			c.Found = fmt.Sprintf("the credentials file %s, good until %s", cfg.Creds, exp.Format(time.DateOnly))
		}
	case strings.HasPrefix(cfg.Token, "cft_"):
		c.Found = "the fleet token: the hub has not given this host its own credential yet (it asks once connected)"
	case cfg.Token != "":
		c.Found = "this host's own token; when it expires is known to the hub only (there: corral fleet invite " + cfg.Name + " --expires D renews it)"
	default:
		c.Status = Fail
		c.Found = "the fleet config holds no credential"
		c.Fix = "corral fleet leave, then corral fleet join URL --token TOKEN"
	}
	return []Check{c}
}

// hubCredentials reads the hub's hosts' credentials and warns of those
// expired or expiring soon.
func hubCredentials(e *Env, now time.Time) []Check {
	c := Check{Name: "fleet credentials", Status: OK}
	b, err := e.ReadFile(filepath.Join(fleet.Dir(e.StateDir), "hub.json"))
	if err != nil {
		c.Found = "no host has a credential of its own yet"
		if !errors.Is(err, fs.ErrNotExist) {
			c.Status = Warn
			c.Found = fmt.Sprintf("the hub's credentials cannot be read: %v", err)
			c.Fix = "it must be a file of yours, mode 0600: " + filepath.Join(fleet.Dir(e.StateDir), "hub.json")
		}
		return []Check{c}
	}
	var f struct {
		Hosts []fleet.Credential `json:"hosts"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		c.Status = Warn
		c.Found = fmt.Sprintf("the hub's credentials file is not JSON: %v", err)
		c.Fix = "the daemon's log says more; corral fleet invite NAME makes host credentials again"
		return []Check{c}
	}
	var expired, soon []string
	for _, h := range f.Hosts {
		switch {
		case h.Expires.IsZero():
		case now.After(h.Expires):
			expired = append(expired, h.Name)
		case h.Expires.Sub(now) < credentialSoon:
			soon = append(soon, fmt.Sprintf("%s in %s", h.Name, roughly(h.Expires.Sub(now))))
		}
	}
	c.Found = plural(len(f.Hosts), "host credential")
	if len(expired) > 0 {
		c.Found += "; expired: " + strings.Join(expired, ", ")
	}
	if len(soon) > 0 {
		c.Found += "; expiring: " + strings.Join(soon, ", ")
	}
	if len(expired)+len(soon) > 0 {
		c.Status = Warn
		c.Fix = "corral fleet invite NAME --expires 720h makes a new one for a host (it joins again with it), --revoke forgets one no longer used"
	}
	return []Check{c}
}

// credsExpiry reads the expiry ("exp", Unix seconds) of the user JWT in a
// NATS credentials file; ok is false when there is no JWT (an nkey seed
// file). A zero time means it does not expire. The file is a secret: only
// its expiry leaves this function.
func credsExpiry(b []byte) (exp time.Time, ok bool) {
	s := string(b)
	const begin = "-----BEGIN NATS USER JWT-----"
	i := strings.Index(s, begin)
	if i < 0 {
		return time.Time{}, false
	}
	rest := strings.TrimLeft(s[i+len(begin):], "\r\n \t")
	jwt, _, _ := strings.Cut(rest, "\n")
	parts := strings.Split(strings.TrimSpace(jwt), ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := decodeSegment(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp json.Number `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return time.Time{}, false
	}
	if claims.Exp == "" {
		return time.Time{}, true
	}
	n, err := strconv.ParseInt(claims.Exp.String(), 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, true
	}
	return time.Unix(n, 0).UTC(), true
}

func decodeSegment(seg string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(seg, "="))
}

// roughly is a duration for a person: "3 days", "5 hours", "12 minutes".
func roughly(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return plural(int(d/(24*time.Hour)), "day")
	case d >= 2*time.Hour:
		return plural(int(d/time.Hour), "hour")
	default:
		return plural(max(int(d/time.Minute), 1), "minute")
	}
}

// shellQuote quotes a path for a command line a person copies.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
