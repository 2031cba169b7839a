package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"strings"

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
