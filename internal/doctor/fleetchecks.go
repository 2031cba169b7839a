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
)

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
