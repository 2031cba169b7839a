package fleet

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/corral-dev/corral/internal/safefile"
)

// Token prefixes: a fleet token lets any host join under the name it
// gives; a host token is one host's own credential (corral fleet invite),
// revocable; the admin token is the hub daemon's own connection.
const (
	fleetTokenPrefix = "cft_"
	hubTokenPrefix   = "chj_"
	hostTokenPrefix  = "cht_"
	adminTokenPrefix = "cat_"
	clientNamePrefix = "corral:"
)

// Credential is one host's own credential, as the hub keeps it.
type Credential struct {
	Name string `json:"name"`
	// Hash is the SHA-256 of the token's secret.
	Hash    string `json:"hash"`
	Control bool   `json:"control"` // may command other hosts and submit jobs
	// Jobs: an observe-only host may take jobs (fleet invite
	// --observe-only --take-jobs); a host with control always may.
	Jobs    bool      `json:"jobs,omitempty"`
	Expires time.Time `json:"expires,omitzero"`
	Created time.Time `json:"created"`
}

// authFile is the hub's credentials: fleet/hub.json.
type authFile struct {
	FleetToken string `json:"fleet_token"`
	AdminToken string `json:"admin_token"`
	// HubToken lets another machine become a hub of this fleet (corral
	// fleet join-hub): it fetches these credentials and the CA with it.
	HubToken string       `json:"hub_token,omitempty"`
	Hosts    []Credential `json:"hosts"`
}

// auth is the hub's authenticator: it maps each connection to its host
// and that host's permissions.
type auth struct {
	path string

	mu   sync.Mutex
	file authFile
	// barred are the hosts refused for a while (over their quota): until
	// when, and why.
	barred map[string]bar
	// forgotten are the hosts whose records were removed when their
	// credential expired.
	forgotten map[string]bool

	refused atomic.Int64
	lastWhy atomic.Pointer[string]
	logf    func(string, ...any)
	// changed, if set, is told of each host credential made or removed
	// here (nil: removed), for the cluster's other hubs.
	changed func(name string, c *Credential)
}

type bar struct {
	until time.Time
	why   string
}

func secret() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func hashOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// loadAuth reads (or creates) the hub's credentials.
func loadAuth(dir string, logf func(string, ...any)) (*auth, error) {
	a := &auth{path: filepath.Join(dir, "hub.json"), logf: logf, barred: map[string]bar{}, forgotten: map[string]bool{}}
	b, err := safefile.ReadOwned(a.path, safefile.StateMax)
	switch {
	case errors.Is(err, os.ErrNotExist):
		a.file = authFile{FleetToken: fleetTokenPrefix + secret(), AdminToken: adminTokenPrefix + secret()}
		if err := a.saveLocked(); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("fleet credentials: %w", err)
	default:
		if err := json.Unmarshal(b, &a.file); err != nil {
			return nil, fmt.Errorf("fleet credentials %s: %v", a.path, err)
		}
	}
	if a.file.HubToken == "" {
		a.file.HubToken = hubTokenPrefix + secret()
		if err := a.saveLocked(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func (a *auth) saveLocked() error {
	if err := os.MkdirAll(filepath.Dir(a.path), 0o700); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(a.file, "", "  ")
	tmp := a.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("fleet credentials: %w", err)
	}
	return os.Rename(tmp, a.path)
}

// snapshot is the credentials file as JSON.
func (a *auth) snapshot() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, _ := json.MarshalIndent(a.file, "", "  ")
	return b
}

// adopt takes a host credential another hub of the cluster made (nil:
// removed there).
func (a *auth) adopt(name string, c *Credential) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	kept := a.file.Hosts[:0]
	for _, h := range a.file.Hosts {
		if h.Name != name {
			kept = append(kept, h)
		}
	}
	a.file.Hosts = kept
	if c != nil {
		a.file.Hosts = append(a.file.Hosts, *c)
		sort.Slice(a.file.Hosts, func(i, j int) bool { return a.file.Hosts[i].Name < a.file.Hosts[j].Name })
	}
	return a.saveLocked()
}

// credentials are the host credentials this hub knows.
func (a *auth) credentials() []Credential {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Credential(nil), a.file.Hosts...)
}

func (a *auth) hubToken() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.file.HubToken
}

func (a *auth) tokens() (fleet, admin string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.file.FleetToken, a.file.AdminToken
}

// invite makes (or replaces) a host's own credential and returns its token.
func (a *auth) invite(name string, r Rights, ttl time.Duration) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	s := secret()
	c := Credential{Name: name, Hash: hashOf(s), Control: r.Control, Jobs: r.Jobs && !r.Control, Created: time.Now().UTC()}
	if ttl > 0 {
		c.Expires = c.Created.Add(ttl)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.barred, name) // a new credential is a fresh start
	delete(a.forgotten, name)
	kept := a.file.Hosts[:0]
	for _, h := range a.file.Hosts {
		if h.Name != name {
			kept = append(kept, h)
		}
	}
	a.file.Hosts = append(kept, c)
	sort.Slice(a.file.Hosts, func(i, j int) bool { return a.file.Hosts[i].Name < a.file.Hosts[j].Name })
	if err := a.saveLocked(); err != nil {
		return "", err
	}
	if a.changed != nil {
		a.changed(name, &c)
	}
	return hostTokenPrefix + name + "_" + s, nil
}

// enroll makes a host's own credential (with control) unless it has one.
func (a *auth) enroll(name string) (string, error) {
	if _, ok := a.credential(name); ok {
		return "", fmt.Errorf("host %s has its own credential already; corral fleet invite %s on the hub makes a new one", name, name)
	}
	return a.invite(name, Rights{Control: true, Jobs: true}, 0)
}

// Rights are what a host's credential allows beyond publishing its own
// panes and reading the fleet's.
type Rights struct {
	Control bool `json:"control"` // command other hosts, submit jobs
	Jobs    bool `json:"jobs"`    // take jobs
}

// rights are those of host's credential; a host without one (it joined
// with the fleet token and has not enrolled yet) has control.
func (a *auth) rights(host string) Rights {
	c, ok := a.credential(host)
	if !ok {
		return Rights{Control: true, Jobs: true}
	}
	return Rights{Control: c.Control, Jobs: c.Control || c.Jobs}
}

// revoke forgets a host's own credential.
func (a *auth) revoke(name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	kept := a.file.Hosts[:0]
	found := false
	for _, h := range a.file.Hosts {
		if h.Name == name {
			found = true
			continue
		}
		kept = append(kept, h)
	}
	if !found {
		return fmt.Errorf("no credential for host %s; corral fleet status lists the hosts", name)
	}
	a.file.Hosts = kept
	if a.changed != nil {
		a.changed(name, nil)
	}
	return a.saveLocked()
}

// bar refuses a host's connections until a time.
func (a *auth) bar(name string, until time.Time, why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for n, b := range a.barred {
		if time.Now().After(b.until) {
			delete(a.barred, n)
		}
	}
	a.barred[name] = bar{until, why}
}

// barredNow says why a host is refused for now ("" when it is not).
func (a *auth) barredNow(name string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, ok := a.barred[name]
	if !ok || time.Now().After(b.until) {
		return ""
	}
	return fmt.Sprintf("host %s is refused until %s: %s", name, b.until.Format(time.TimeOnly), b.why)
}

// expiredNow lists the hosts whose credential has expired and whose
// records are not removed yet.
func (a *auth) expiredNow(now time.Time) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, h := range a.file.Hosts {
		if !h.Expires.IsZero() && now.After(h.Expires) && !a.forgotten[h.Name] {
			out = append(out, h.Name)
		}
	}
	return out
}

func (a *auth) markForgotten(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forgotten[name] = true
}

func (a *auth) credential(name string) (Credential, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, h := range a.file.Hosts {
		if h.Name == name {
			return h, true
		}
	}
	return Credential{}, false
}

func (a *auth) refuse(why string) bool {
	a.refused.Add(1)
	a.lastWhy.Store(&why)
	if a.logf != nil {
		a.logf("fleet: refused a connection: %s", why)
	}
	return false
}

// Check implements server.Authentication.
func (a *auth) Check(c server.ClientAuthentication) bool {
	if c.Kind() != server.CLIENT {
		return false
	}
	o := c.GetOpts()
	name, named := strings.CutPrefix(o.Name, clientNamePrefix)
	tok := o.Token
	if tok == "" {
		tok = o.Password
	}
	fleet, admin := a.tokens()
	switch {
	case strings.HasPrefix(tok, adminTokenPrefix) && subtle.ConstantTimeCompare([]byte(tok), []byte(admin)) == 1:
		c.RegisterUser(&server.User{Username: "admin:" + name})
		return true
	case strings.HasPrefix(tok, hubTokenPrefix) && subtle.ConstantTimeCompare([]byte(tok), []byte(a.hubToken())) == 1:
		// Another machine becoming a hub: it may only ask for the
		// cluster's credentials.
		c.RegisterUser(&server.User{Username: "hub-joiner", Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{subjHubJoin}},
			Subscribe: &server.SubjectPermission{Allow: []string{InboxPrefix(hubJoinerName) + ".>"}},
		}})
		return true
	case strings.HasPrefix(tok, fleetTokenPrefix) && subtle.ConstantTimeCompare([]byte(tok), []byte(fleet)) == 1:
		if !named || CheckName(name) != nil {
			return a.refuse(fmt.Sprintf("fleet token without a valid host name (%q)", o.Name))
		}
		if _, ok := a.credential(name); ok {
			return a.refuse(fmt.Sprintf("host %s has its own credential; the fleet token cannot take its name", name))
		}
		if why := a.barredNow(name); why != "" {
			return a.refuse(why)
		}
		p := Permissions(name, true)
		p.Publish.Allow = append(p.Publish.Allow, subjEnroll+name)
		c.RegisterUser(&server.User{Username: name, Permissions: p})
		return true
	case strings.HasPrefix(tok, hostTokenPrefix):
		rest := strings.TrimPrefix(tok, hostTokenPrefix)
		i := strings.LastIndexByte(rest, '_')
		if i <= 0 {
			return a.refuse("malformed host token")
		}
		host, s := rest[:i], rest[i+1:]
		cred, ok := a.credential(host)
		if !ok || subtle.ConstantTimeCompare([]byte(hashOf(s)), []byte(cred.Hash)) != 1 {
			return a.refuse(fmt.Sprintf("unknown or revoked credential for host %s", host))
		}
		if !cred.Expires.IsZero() && time.Now().After(cred.Expires) {
			return a.refuse(fmt.Sprintf("the credential of host %s expired at %s", host, cred.Expires.Format(time.RFC3339)))
		}
		if named && name != host {
			return a.refuse(fmt.Sprintf("host %s's credential used under the name %s", host, name))
		}
		if why := a.barredNow(host); why != "" {
			return a.refuse(why)
		}
		u := &server.User{Username: host, Permissions: PermissionsFor(host, cred.Control, cred.Control || cred.Jobs)}
		if !cred.Expires.IsZero() {
			u.ConnectionDeadline = cred.Expires
		}
		c.RegisterUser(u)
		return true
	}
	return a.refuse("wrong or missing token")
}

// Permissions are a host's: it publishes only its own states, events and
// job output, receives only the commands addressed to it and the replies
// to its own requests (its inbox), and (with control) may command other
// hosts and submit jobs. Its JetStream API is cut to what a member does:
// it reads the buckets and the event stream (the board: every host's
// states and state changes), consumes only the jobs addressed to it or to
// any host (consumers of fixed names and filters), and follows only the
// job output sent back to itself. The JetStream API checks that the
// filter in a consumer-create subject is the consumer's filter, and
// refuses a second filter, so a permission on that subject binds both.
//
// An observe-only host (no control) takes no jobs: PermissionsFor with jobs
// lets it.
func Permissions(host string, control bool) *server.Permissions {
	return PermissionsFor(host, control, control)
}

// PermissionsFor are Permissions with the right to take jobs apart.
func PermissionsFor(host string, control, jobs bool) *server.Permissions {
	const api = "$JS.API."
	panes, hosts := "KV_"+PanesBucket, "KV_"+HostsBucket
	pub := []string{
		subjEvents + host,
		"$KV." + PanesBucket + "." + host + ".>",
		"$KV." + HostsBucket + "." + host,
		subjJobOut + "*." + host + ".>",
		subjUnenroll + host,
		subjRights + host,
		// Watching another host's pane (attach, read-only without control).
		subjView + "*",
		api + "INFO", api + "STREAM.NAMES",
		"$JS.FC.>",
	}
	// Readable by every member: the pane and host buckets, the events.
	for stream, filter := range map[string]string{
		panes:        "$KV." + PanesBucket + ".>",
		hosts:        "$KV." + HostsBucket + ".>",
		EventsStream: subjEvents + "*",
	} {
		pub = append(pub,
			api+"STREAM.INFO."+stream, api+"STREAM.MSG.GET."+stream,
			api+"DIRECT.GET."+stream, api+"DIRECT.GET."+stream+".>",
			api+"CONSUMER.CREATE."+stream+".*."+filter,
			api+"CONSUMER.INFO."+stream+".*", api+"CONSUMER.MSG.NEXT."+stream+".*", api+"CONSUMER.DELETE."+stream+".*")
	}
	// Job output: only what is sent back to this host, pushed to its
	// inbox (no consumer of that stream can be pulled from).
	pub = append(pub,
		api+"CONSUMER.CREATE."+OutputStream+".*."+subjJobOut+host+".>", api+"CONSUMER.DELETE."+OutputStream+".*")
	// Jobs: those addressed to this host, and those for any host.
	if jobs {
		for name, filter := range map[string]string{jobConsumer(host): subjJobFor + host, anyJobsConsumer: subjJobAny} {
			pub = append(pub,
				api+"CONSUMER.CREATE."+JobsStream+"."+name+"."+filter,
				api+"CONSUMER.INFO."+JobsStream+"."+name, api+"CONSUMER.MSG.NEXT."+JobsStream+"."+name,
				"$JS.ACK."+JobsStream+"."+name+".>")
		}
		// Claiming and starting a job of any caller's (see claimRecord).
		pub = append(pub, subjJobOut+"*."+claimToken+".*")
	}
	if control {
		// Submitting jobs, and giving up one's own job's attempts.
		pub = append(pub, subjCmd+"*", "corral.jobs.>", subjJobCtl+"*", subjJobOut+host+"."+claimToken+".*")
	}
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: pub},
		Subscribe: &server.SubjectPermission{Allow: []string{InboxPrefix(host) + ".>", subjCmd + host, subjView + host, subjJobCtl + "*"}},
		Response:  &server.ResponsePermission{MaxMsgs: 1, Expires: time.Minute},
	}
}
