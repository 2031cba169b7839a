// Package fleet joins several machines' corral daemons through NATS with
// JetStream: one daemon (the hub) runs an embedded NATS server, every
// daemon (the hub too) is a member that publishes its panes' states to a
// key-value bucket, its events to a stream, serves commands addressed to
// it, and takes headless jobs from a work queue.
package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/safefile"
)

// Subjects, buckets and streams. HOST is a host name (one subject token).
const (
	PanesBucket  = "corral_panes" // key HOST.ID: a PaneRecord
	HostsBucket  = "corral_hosts" // key HOST: a Heartbeat
	EventsStream = "CORRAL_EVENTS"
	JobsStream   = "CORRAL_JOBS"   // work queue: corral.jobs.any, corral.jobs.host.HOST
	OutputStream = "CORRAL_JOBOUT" // corral.jobout.CALLER.HOST.JOB: a job's lines from the host running it, for its caller

	subjEvents = "corral.ev."  // + HOST
	subjCmd    = "corral.cmd." // + HOST: request/reply
	subjJobAny = "corral.jobs.any"
	subjJobFor = "corral.jobs.host." // + HOST
	subjJobOut = "corral.jobout."    // + CALLER.HOST.JOB
	subjJobCtl = "corral.jobctl."    // + JOB: cancel
	// A job's claim records go to corral.jobout.CALLER._claim.JOB: in the
	// caller's output, under a token no host name can be.
	claimToken = "_claim"
	// A host that joined with the fleet token asks the hub for its own
	// credential on corral.enroll.HOST; corral.unenroll.HOST gives it up
	// when the host leaves.
	subjEnroll   = "corral.enroll."
	subjUnenroll = "corral.unenroll."
	// A host asks the hubs what its credential allows on
	// corral.rights.HOST (fleet status shows it; an observe-only host
	// takes jobs only when invited to).
	subjRights = "corral.rights."
)

// Heartbeat and reachability.
const (
	HeartbeatEvery = time.Second
	// Unreachable is how long after its last heartbeat a host is shown
	// unreachable.
	Unreachable = 3 * time.Second
	// MaxClockSkew is how far a host's clock may be from the server's
	// before its reports are refused.
	MaxClockSkew = 30 * time.Second
	// MaxMessage bounds every message in the fleet (the server refuses
	// bigger ones): commands and their answers, jobs and their output.
	MaxMessage = 1 << 20
)

// What one host may keep in the fleet's store. The server refuses a pane
// record, heartbeat or event over its bound, and keeps only a host's last
// MaxHostEvents events. The hub holds each host to its pane quota: a host
// over it is disconnected, refused for QuotaPenalty, and its records are
// removed. A member keeps itself within three quarters of the quota.
const (
	// MaxRecord bounds one pane record (a pane's state is a few KB).
	MaxRecord = 64 << 10
	// MaxEvent bounds one event in the fleet's stream.
	MaxEvent = 4 << 10
	// MaxHostRecords and MaxHostBytes bound what a host keeps in the pane
	// bucket, the markers of its removed panes included.
	MaxHostRecords = 1000
	MaxHostBytes   = 8 << 20
	// MaxHostEvents is how many of a host's events the stream keeps.
	MaxHostEvents = 10000
	// QuotaPenalty is how long a host over its quota is refused.
	QuotaPenalty = time.Minute

	maxHeartbeat = 4 << 10
)

// Config is the fleet part of a daemon's state folder: fleet/config.json.
type Config struct {
	// Name is this host's name in the fleet.
	Name string `json:"name"`
	// Hub: this daemon runs the embedded NATS server.
	Hub    bool   `json:"hub,omitempty"`
	Listen string `json:"listen,omitempty"` // the hub's HOST:PORT
	TLS    bool   `json:"tls,omitempty"`    // the hub serves TLS with its own CA
	// ClusterListen (a hub's) is its HOST:PORT for routes to the other
	// hubs of its cluster; Routes are their route URLs; Replicas is how
	// many copies of the fleet's buckets and streams it asks for.
	ClusterListen string   `json:"cluster_listen,omitempty"`
	Routes        []string `json:"routes,omitempty"`
	Replicas      int      `json:"replicas,omitempty"`
	// URLs are the NATS servers a member connects to.
	URLs []string `json:"urls,omitempty"`
	// Token is the member's credential (a fleet token or a host's own).
	Token string `json:"token,omitempty"`
	// Creds is a NATS credentials file, for a team's own NATS.
	Creds string `json:"creds,omitempty"`
	// CAFingerprint pins the hub's CA (SHA-256, hex) for TLS.
	CAFingerprint string `json:"ca_fingerprint,omitempty"`
	// MaxJobs is how many fleet jobs this host runs at once (0: none).
	MaxJobs int `json:"max_jobs"`
	// NotifyFleet sends this host's notifications for other hosts' panes
	// too, named HOST:NAME.
	NotifyFleet bool `json:"notify_fleet,omitempty"`
	// ForgetAfterMS (the hub's): a host unreachable this long is removed
	// from the fleet (0: never).
	ForgetAfterMS int64 `json:"forget_after_ms,omitempty"`
}

// Dir is the fleet folder in a state folder.
func Dir(stateDir string) string { return filepath.Join(stateDir, "fleet") }

func configPath(stateDir string) string { return filepath.Join(Dir(stateDir), "config.json") }

// ErrNotConfigured means the daemon is in no fleet.
var ErrNotConfigured = errors.New("this corral is in no fleet; corral fleet init starts one, corral fleet join joins one")

// LoadConfig reads the fleet config; ErrNotConfigured when there is none.
func LoadConfig(stateDir string) (Config, error) {
	var c Config
	b, err := safefile.ReadOwned(configPath(stateDir), safefile.StateMax)
	if errors.Is(err, os.ErrNotExist) {
		return c, ErrNotConfigured
	}
	if err != nil {
		return c, fmt.Errorf("fleet config: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("fleet config %s: %v; fix it or remove it (corral fleet leave)", configPath(stateDir), err)
	}
	return c, CheckName(c.Name)
}

// SaveConfig writes the fleet config (mode 0600: it holds a credential).
func SaveConfig(stateDir string, c Config) error {
	if err := os.MkdirAll(Dir(stateDir), 0o700); err != nil {
		return fmt.Errorf("fleet config: %w", err)
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	tmp := configPath(stateDir) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("fleet config: %w", err)
	}
	return os.Rename(tmp, configPath(stateDir))
}

// RemoveConfig forgets the fleet (keeping the hub's store and CA).
func RemoveConfig(stateDir string) error {
	err := os.Remove(configPath(stateDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`) })

// CheckName refuses a host name that cannot be one subject token.
func CheckName(name string) error {
	if !nameRE().MatchString(name) {
		return fmt.Errorf("host name %q: use 1 to 32 letters, digits, - or _, starting with a letter or digit", name)
	}
	return nil
}

// DefaultName is this machine's host name, made a valid fleet name.
func DefaultName() string {
	h, _ := os.Hostname()
	out := []byte{}
	for i := 0; i < len(h) && len(out) < 32; i++ {
		c := h[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			out = append(out, c)
		case c == '.':
			i = len(h)
		}
	}
	if CheckName(string(out)) != nil {
		return "host"
	}
	return string(out)
}

// The job queue's consumers: one per host for the jobs addressed to it,
// one shared for those for any host.
const anyJobsConsumer = "workers"

func jobConsumer(host string) string { return "host_" + host }

// InboxPrefix is a host's inbox prefix: the replies it receives come on
// subjects under it, which only it may read.
func InboxPrefix(host string) string { return "_INBOX." + host }
