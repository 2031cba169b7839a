package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/safefile"
)

// Local is the daemon a member speaks for.
type Local interface {
	// Handler is the daemon's own API, served in process.
	Handler() http.Handler
	Panes() []api.Pane
	Pane(id string) (api.Pane, bool)
	// Subscribe returns new events (the channel closes when the
	// subscriber fell behind), the kept ones after seq, and a stop.
	Subscribe(after uint64) (<-chan eventlog.Event, []eventlog.Event, func())
}

// PaneRecord is a pane in the fleet: the pane bucket's value.
type PaneRecord struct {
	Host string `json:"host"`
	api.Pane
	// Sent is the host's clock when it wrote the record.
	Sent time.Time `json:"sent"`
}

// Heartbeat is a host's value in the hosts bucket, written every second.
type Heartbeat struct {
	Host string `json:"host"`
	// HostID is the machine's (LoadHostID): the same under a new name.
	HostID  string `json:"host_id,omitempty"`
	Version string `json:"version"`
	Panes   int    `json:"panes"`
	Jobs    int    `json:"jobs"`
	MaxJobs int    `json:"max_jobs"`
	// Access is what the host's credential allows (AccessControl, …; ""
	// when no corral hub said: a team's own NATS).
	Access string    `json:"access,omitempty"`
	Sent   time.Time `json:"sent"`
}

// A host's access, as fleet status shows it.
const (
	AccessControl     = "control"           // commands other hosts, submits and takes jobs
	AccessObserve     = "observe-only"      // neither commands nor takes jobs
	AccessObserveJobs = "observe-only+jobs" // takes jobs, commands nothing
)

func (r Rights) access() string {
	switch {
	case r.Control:
		return AccessControl
	case r.Jobs:
		return AccessObserveJobs
	}
	return AccessObserve
}

// HostStatus is one row of corral fleet status.
type HostStatus struct {
	Host      string `json:"host"`
	Reachable bool   `json:"reachable"`
	LastSeen  string `json:"last_seen"` // RFC 3339, "" if never
	Panes     int    `json:"panes"`
	Jobs      int    `json:"jobs"`
	Version   string `json:"version"`
	MaxJobs   int    `json:"max_jobs"`
	// Access is what its credential allows: control, observe-only,
	// observe-only+jobs ("" unknown).
	Access string `json:"access,omitempty"`
	// AnyHostJobs: the host takes jobs queued for any host (reachable,
	// max_jobs > 0).
	AnyHostJobs bool   `json:"any_host_jobs"`
	Problem     string `json:"problem,omitempty"`
	// UnreachableFor is how long the host has been unreachable
	// (seconds, 0 when reachable).
	UnreachableFor int64 `json:"unreachable_for_s,omitempty"`
}

// Event is an event of the fleet's stream: a host's event, with its host.
type Event struct {
	Host string
	eventlog.Event
	// StreamSeq is the event's place in the fleet's stream.
	StreamSeq uint64
}

// MarshalJSON writes the event's own fields with "host" and "stream_seq".
func (e Event) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(e.Event)
	if err != nil {
		return nil, err
	}
	h, _ := json.Marshal(e.Host)
	out := []byte(`{"host":` + string(h) + `,"stream_seq":` + strconv.FormatUint(e.StreamSeq, 10) + `,`)
	return append(out, b[1:]...), nil
}

// MemberOptions configure a member.
type MemberOptions struct {
	Name string
	// HostID is the machine's id (LoadHostID), sent with each heartbeat.
	HostID string
	URLs   []string
	// Token, or Creds (a NATS credentials file), authenticates the host.
	Token, Creds  string
	CAFingerprint string
	MaxJobs       int
	Version       string
	Local         Local
	// Admin makes the fleet's buckets and streams (the hub's own member).
	Admin bool
	// RefuseTaken refuses to join under the name of a host whose
	// heartbeat is fresh (a first join; not a restart).
	RefuseTaken bool
	Replicas    int
	// Watch keeps a view of every host's panes (the boards, corral ls
	// --fleet); OnPane, if set, is told of each change.
	Watch  bool
	OnPane func(rec PaneRecord, deleted bool)
	// Enroll and Unenroll (the hub's own member) make and forget the own
	// credential of a host that joined with the fleet token.
	Enroll   func(host string) (string, error)
	Unenroll func(host string) error
	// Rights (a hub's own member) says what a host's credential allows.
	Rights func(host string) Rights
	Logf   func(string, ...any)
}

// Member is one daemon in the fleet.
type Member struct {
	o      MemberOptions
	nc     *nats.Conn
	js     jetstream.JetStream
	panes  jetstream.KeyValue
	hosts  jetstream.KeyValue
	events jetstream.Stream

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	view   *view
	worker *worker
	attach attachHost
	// token is the credential each (re)connection presents: the fleet
	// token until the hub gave this host its own.
	token atomic.Pointer[string]

	mu       sync.Mutex
	dirty    map[string]bool
	known    map[string]int   // panes in the bucket: the size of each one's record
	stored   int              // their sum
	queue    []eventlog.Event // events not yet in the stream
	lastSeq  uint64           // the last local event seen
	wake     chan struct{}
	evWake   chan struct{}
	resynced chan struct{} // closed and replaced at each reconnect
	askedFor chan struct{}
	// rewatch is closed to make the watchers start again.
	rewatch   chan struct{}
	rewatched time.Time // the connection whose stream position is known

	// Counters.
	refusedOut atomic.Int64 // our own messages the server refused
	refusedAPI atomic.Int64 // our client library's JetStream requests the server refused
	// leaving is set while the host removes its records to leave: they
	// are not written back.
	leaving atomic.Bool
	// cmdRefused counts the commands to other hosts the server refused
	// (an observe-only credential); downSince is when the connection to
	// the hub was lost (0: connected).
	cmdRefused atomic.Int64
	downSince  atomic.Int64
	badIn      atomic.Int64 // malformed or refused messages we received
	dropped    atomic.Int64 // events dropped from a full queue, or too big
	overQuota  atomic.Bool  // some panes are not in the fleet: the host's quota is full
	published  atomic.Int64
	jobs       atomic.Int32
	// maxJobs is o.MaxJobs until SetMaxJobs changes it.
	maxJobs atomic.Int32
	// rights are what this host's credential allows, once a hub said (nil
	// until then, and on a team's own NATS).
	rights atomic.Pointer[Rights]
	// rightsAsked is closed once the hubs said, or will not say: the
	// worker waits for it, so that an observe-only host never asks the
	// job queue for what it may not have.
	rightsAsked chan struct{}
	paneCount   atomic.Int64
	// replicas is Replicas as last read by the loop ReplicasNow starts.
	replicas     atomic.Int32
	replicasOnce sync.Once
	lastErr      atomic.Pointer[string]
}

// pubAckWait is how long a pane write waits for the stream to take it.
const pubAckWait = 2 * time.Second

// MaxQueue bounds the events a member keeps while the fleet is away.
const MaxQueue = 100000

// Join connects to the fleet and starts publishing and serving. The
// first connection must succeed (a wrong token is an error here); later
// losses are reconnected forever, events queued meanwhile.
func Join(ctx context.Context, o MemberOptions) (*Member, error) {
	if err := CheckName(o.Name); err != nil {
		return nil, err
	}
	if len(o.URLs) == 0 {
		return nil, errors.New("no fleet address; give one like nats://HOST:7422")
	}
	for _, u := range o.URLs {
		if strings.HasPrefix(u, "tls://") && o.CAFingerprint == "" && o.Creds == "" {
			return nil, fmt.Errorf("%s serves TLS with the hub's own CA: give its fingerprint with --ca-fingerprint (the join command corral fleet init printed carries it; corral fleet status on the hub shows it)", u)
		}
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	m := &Member{o: o, dirty: map[string]bool{}, known: map[string]int{}, wake: make(chan struct{}, 1), evWake: make(chan struct{}, 1), resynced: make(chan struct{}), rewatch: make(chan struct{}), view: newView()}
	m.maxJobs.Store(int32(max(o.MaxJobs, 0)))
	m.rightsAsked = make(chan struct{})
	m.ctx, m.cancel = context.WithCancel(context.Background())
	opts := []nats.Option{
		nats.Name(clientNamePrefix + o.Name), nats.CustomInboxPrefix(InboxPrefix(o.Name)),
		nats.MaxReconnects(-1), nats.ReconnectWait(200 * time.Millisecond), nats.ReconnectJitter(100*time.Millisecond, time.Second),
		nats.ReconnectBufSize(16 << 20), nats.PingInterval(2 * time.Second), nats.MaxPingsOutstanding(2),
		nats.Timeout(5 * time.Second),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) || strings.Contains(err.Error(), "Permissions Violation") {
				switch {
				case strings.Contains(err.Error(), `"$JS.API.`):
					// The client library's own request (a consumer it
					// made), not a message this host chose to send: kept
					// apart from the refusals fleet status reports.
					m.refusedAPI.Add(1)
				case strings.Contains(err.Error(), `"`+subjCmd):
					m.refusedOut.Add(1)
					m.cmdRefused.Add(1)
				default:
					m.refusedOut.Add(1)
				}
			}
			m.setErr(err)
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			m.downSince.CompareAndSwap(0, time.Now().UnixNano())
			if err != nil {
				m.setErr(fmt.Errorf("disconnected from the fleet: %w", err))
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			m.downSince.Store(0)
			m.reconnected()
		}),
	}
	switch {
	case o.Creds != "":
		opt, err := credsOption(o.Creds)
		if err != nil {
			return nil, err
		}
		opts = append(opts, opt)
	case o.Token != "":
		tok := o.Token
		m.token.Store(&tok)
		opts = append(opts, nats.TokenHandler(func() string { return *m.token.Load() }))
	}
	if o.CAFingerprint != "" {
		opts = append(opts, nats.Secure(clientTLS(o.CAFingerprint)))
	}
	nc, err := nats.Connect(strings.Join(o.URLs, ","), opts...)
	if err != nil {
		if errors.Is(err, nats.ErrAuthorization) || strings.Contains(strings.ToLower(err.Error()), "authorization") {
			return nil, fmt.Errorf("the fleet at %s refused this host's credential (a wrong, revoked or expired token, or the name %s is another host's: pick another --name): %w", strings.Join(o.URLs, ","), o.Name, err)
		}
		return nil, fmt.Errorf("cannot reach the fleet at %s: %w; check the address and that the hub's daemon runs", strings.Join(o.URLs, ","), err)
	}
	m.nc = nc
	if err := m.setup(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	if o.RefuseTaken {
		gctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		e, err := m.hosts.Get(gctx, o.Name)
		cancel()
		if err == nil && e.Operation() == jetstream.KeyValuePut && time.Since(e.Created()) < Unreachable {
			nc.Close()
			return nil, fmt.Errorf("a host named %s is in the fleet and answering; pick another --name", o.Name)
		}
	}
	if strings.HasPrefix(o.Token, fleetTokenPrefix) && !o.Admin {
		m.enroll()
	}
	m.start()
	return m, nil
}

// enroll trades the fleet token for this host's own credential, so that
// the host's later connections, and the config that keeps them, hold no
// token that could take another host's name.
func (m *Member) enroll() {
	resp, err := m.nc.Request(subjEnroll+m.o.Name, nil, 5*time.Second)
	if err == nil && strings.HasPrefix(string(resp.Data), hostTokenPrefix+m.o.Name+"_") {
		tok := string(resp.Data)
		m.token.Store(&tok)
		return
	}
	if err == nil {
		err = errors.New(string(resp.Data))
	}
	m.setErr(fmt.Errorf("the hub gave this host no credential of its own (%v); it keeps the fleet token", err))
}

// ServerURLs are the fleet's servers this member knows: those it was
// given and those the cluster announced.
func (m *Member) ServerURLs() []string { return m.nc.Servers() }

// Token is the credential the member connects with: its own once the hub
// gave it one (to keep in the config in place of the fleet token).
func (m *Member) Token() string {
	if p := m.token.Load(); p != nil {
		return *p
	}
	return m.o.Token
}

func (m *Member) serveEnroll(msg *nats.Msg) {
	host, unenroll := strings.CutPrefix(msg.Subject, subjUnenroll)
	if !unenroll {
		host = strings.TrimPrefix(msg.Subject, subjEnroll)
	}
	if CheckName(host) != nil {
		m.badIn.Add(1)
		return
	}
	if unenroll {
		// Answer first: forgetting the credential disconnects the host.
		_ = msg.Respond([]byte("ok"))
		_ = m.nc.Flush()
		if err := m.o.Unenroll(host); err == nil {
			m.o.Logf("fleet: host %s left; its credential is forgotten", host)
		}
		return
	}
	tok, err := m.o.Enroll(host)
	if err != nil {
		_ = msg.Respond([]byte(err.Error()))
		return
	}
	m.o.Logf("fleet: host %s joined with the fleet token; it now has its own credential", host)
	_ = msg.Respond([]byte(tok))
}

// credsOption reads a credentials file: a NATS .creds file (a user JWT
// and its nkey seed, for a server in operator mode) or a bare nkey seed
// (a server whose users are nkeys, without JWTs).
func credsOption(path string) (nats.Option, error) {
	b, err := safefile.Read(path, safefile.StateMax)
	if err != nil {
		return nil, fmt.Errorf("the credentials file: %w", err)
	}
	if _, err := nkeys.ParseDecoratedNKey(b); err != nil {
		return nil, fmt.Errorf("the credentials file %s holds no nkey seed (%v); give a NATS .creds file or an nkey seed file", path, err)
	}
	if bytes.Contains(b, []byte("BEGIN NATS USER JWT")) {
		return nats.UserCredentials(path), nil
	}
	return nats.NkeyOptionFromSeed(path)
}

func (m *Member) setErr(err error) {
	s := err.Error()
	m.lastErr.Store(&s)
	m.o.Logf("fleet: %v", err)
}

func (m *Member) setup(ctx context.Context) error {
	// An asynchronous write unacknowledged this long fails (its pending
	// entry is freed); the pane is written again.
	js, err := jetstream.New(m.nc, jetstream.WithPublishAsyncTimeout(pubAckWait))
	if err != nil {
		return err
	}
	m.js = js
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if m.o.Admin {
		if err := EnsureStreams(ctx, js, m.o.Replicas); err != nil {
			return err
		}
	}
	if m.panes, err = js.KeyValue(ctx, PanesBucket); err != nil {
		return fmt.Errorf("the fleet has no pane bucket (%v); is its hub a corral (corral fleet init)?", err)
	}
	if m.hosts, err = js.KeyValue(ctx, HostsBucket); err != nil {
		return fmt.Errorf("the fleet has no hosts bucket: %v", err)
	}
	if m.events, err = js.Stream(ctx, EventsStream); err != nil {
		return fmt.Errorf("the fleet has no event stream: %v", err)
	}
	return nil
}

// Each stream's share of the hub's store (JetStreamMaxStore, 1 GiB). The
// server reserves a stream's MaxBytes when it makes the stream, so their
// sum stays within the store: one stream filling up never stops writes
// to another (a full store once stopped every heartbeat).
const (
	panesBytes  = 128 << 20
	hostsBytes  = 8 << 20
	eventsBytes = 256 << 20
	jobsBytes   = 64 << 20
	outputBytes = 256 << 20
)

func bucketConfigs(replicas int) []jetstream.KeyValueConfig {
	return []jetstream.KeyValueConfig{
		{Bucket: PanesBucket, History: 1, Replicas: replicas, Storage: jetstream.FileStorage, MaxValueSize: MaxRecord, MaxBytes: panesBytes},
		{Bucket: HostsBucket, History: 1, Replicas: replicas, Storage: jetstream.FileStorage, MaxValueSize: maxHeartbeat, MaxBytes: hostsBytes},
	}
}

// EnsureStreams makes the fleet's buckets and streams, or brings their
// limits up to date.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, replicas int) error {
	// Replicas are never lowered: a hub of a cluster restarting alone, or
	// a hub that knew fewer nodes, keeps the cluster's copies.
	kept := func(stream string, want int) int {
		if s, err := js.Stream(ctx, stream); err == nil {
			return max(want, s.CachedInfo().Config.Replicas)
		}
		return want
	}
	if replicas > 1 {
		if s, err := js.Stream(ctx, "KV_"+AuthBucket); err == nil && s.CachedInfo().Config.Replicas < replicas {
			c := s.CachedInfo().Config
			c.Replicas = replicas
			if _, err := js.UpdateStream(ctx, c); err != nil {
				return fmt.Errorf("fleet bucket %s: %w", AuthBucket, err)
			}
		}
	}
	for _, b := range bucketConfigs(replicas) {
		b.Replicas = kept("KV_"+b.Bucket, b.Replicas)
		if _, err := js.CreateOrUpdateKeyValue(ctx, b); err != nil {
			return fmt.Errorf("fleet bucket %s: %w", b.Bucket, err)
		}
	}
	for _, c := range []jetstream.StreamConfig{
		// The stream keeps each host's last MaxHostEvents events: a host
		// sending more pushes out only its own.
		{Name: EventsStream, Subjects: []string{subjEvents + "*"}, MaxAge: 7 * 24 * time.Hour, MaxBytes: eventsBytes,
			MaxMsgsPerSubject: MaxHostEvents, Duplicates: 2 * time.Minute, Replicas: replicas, MaxMsgSize: MaxEvent},
		// A full queue refuses new jobs rather than dropping queued ones.
		{Name: JobsStream, Subjects: []string{"corral.jobs.>"}, Retention: jetstream.WorkQueuePolicy, MaxAge: 24 * time.Hour,
			MaxBytes: jobsBytes, Discard: jetstream.DiscardNew, Replicas: replicas, MaxMsgSize: MaxMessage},
		{Name: OutputStream, Subjects: []string{subjJobOut + ">"}, MaxAge: time.Hour, MaxBytes: outputBytes,
			Duplicates: time.Minute, Replicas: replicas, MaxMsgSize: MaxMessage},
	} {
		c.Replicas = kept(c.Name, c.Replicas)
		if _, err := js.CreateOrUpdateStream(ctx, c); err != nil {
			return fmt.Errorf("fleet stream %s: %w", c.Name, err)
		}
	}
	return nil
}

func (m *Member) start() {
	if m.o.Watch {
		m.rewatched = time.Now()
		m.goLoop(m.watchPanes)
		m.goLoop(m.watchHosts)
		if m.o.Local != nil {
			m.goLoop(m.watchdog)
		}
	}
	if m.o.Enroll != nil && m.o.Unenroll != nil {
		for _, subj := range []string{subjEnroll + "*", subjUnenroll + "*"} {
			// One hub of a cluster answers each (the others learn the
			// credential through the shared bucket).
			if _, err := m.nc.QueueSubscribe(subj, "hubs", m.serveEnroll); err != nil {
				m.setErr(err)
			}
		}
	}
	if m.o.Rights != nil {
		if _, err := m.nc.QueueSubscribe(subjRights+"*", "hubs", m.serveRights); err != nil {
			m.setErr(err)
		}
	}
	switch {
	case m.o.Admin:
		m.rights.Store(&Rights{Control: true, Jobs: true})
		close(m.rightsAsked)
	case m.o.Local != nil:
		m.goLoop(m.askRights)
	default:
		close(m.rightsAsked)
	}
	if m.o.Local != nil {
		sub, err := m.nc.Subscribe(subjCmd+m.o.Name, m.serveCommand)
		if err != nil {
			m.setErr(err)
		} else {
			_ = sub.SetPendingLimits(1024, 64<<20)
		}
		if _, err := m.nc.Subscribe(subjView+m.o.Name, m.serveView); err != nil {
			m.setErr(err)
		}
		m.goLoop(m.follow)
		m.goLoop(m.syncLoop)
		m.goLoop(m.publishLoop)
		m.goLoop(m.scanLoop)
		m.goLoop(m.heartbeatLoop)
		// Always: fleet set --max-jobs may make a host take jobs later;
		// the worker asks the queue for nothing while the limit is 0.
		m.startWorker()
	}
	m.reconnected()
	// The subscriptions are in place at the server when Join returns.
	_ = m.nc.FlushTimeout(5 * time.Second)
}

func (m *Member) goLoop(f func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
}

// reconnected redoes what a new connection needs: a full pane sync, and
// the event stream's resume point.
func (m *Member) reconnected() {
	m.mu.Lock()
	close(m.resynced)
	m.resynced = make(chan struct{})
	m.dirty["*"] = true
	m.mu.Unlock()
	m.poke()
}

func (m *Member) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Name is this host's name.
func (m *Member) Name() string { return m.o.Name }

// Conn is the member's NATS connection.
func (m *Member) Conn() *nats.Conn { return m.nc }

// follow takes the daemon's events: each marks its pane for the bucket
// and joins the queue for the stream.
func (m *Member) follow() {
	for m.ctx.Err() == nil {
		m.mu.Lock()
		after := m.lastSeq
		m.mu.Unlock()
		ch, backlog, stop := m.o.Local.Subscribe(after)
		m.take(backlog...)
		func() {
			defer stop()
			for {
				select {
				case <-m.ctx.Done():
					return
				case ev, ok := <-ch:
					if !ok {
						m.mu.Lock()
						m.dirty["*"] = true // fell behind: resync all
						m.mu.Unlock()
						return
					}
					m.take(ev)
				}
			}
		}()
	}
}

func (m *Member) take(evs ...eventlog.Event) {
	if len(evs) == 0 {
		return
	}
	m.mu.Lock()
	for _, ev := range evs {
		if ev.Seq <= m.lastSeq {
			continue
		}
		m.lastSeq = ev.Seq
		m.dirty[ev.Pane] = true
		m.queue = append(m.queue, ev)
	}
	if over := len(m.queue) - MaxQueue; over > 0 {
		m.queue = m.queue[over:]
		m.dropped.Add(int64(over))
	}
	m.mu.Unlock()
	m.poke()
	select {
	case m.evWake <- struct{}{}:
	default:
	}
}

func (m *Member) key(id string) string { return m.o.Name + "." + id }

// syncLoop writes the current state of each changed pane to the bucket;
// a write that fails is tried again half a second later.
func (m *Member) syncLoop() {
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.wake:
		case <-retry.C:
		}
		m.mu.Lock()
		dirty := m.dirty
		m.dirty = map[string]bool{}
		m.mu.Unlock()
		if len(dirty) == 0 || m.leaving.Load() {
			continue
		}
		failed := map[string]bool{}
		if dirty["*"] {
			delete(dirty, "*")
			if err := m.syncAll(); err != nil {
				failed["*"] = true
			}
		}
		for _, id := range m.syncPanes(dirty) {
			failed[id] = true
		}
		if len(failed) > 0 {
			m.mu.Lock()
			for id := range failed {
				m.dirty[id] = true
			}
			m.mu.Unlock()
			retry.Reset(500 * time.Millisecond)
		}
	}
}

// syncPanes writes the panes' states to the bucket, all at once (the
// writes are pipelined, then their acknowledgements awaited), and
// deletes the keys of panes gone. It returns the ids whose write failed.
func (m *Member) syncPanes(ids map[string]bool) []string {
	var failed []string
	type pending struct {
		id string
		f  jetstream.PubAckFuture
	}
	var wait []pending
	for id := range ids {
		p, ok := m.o.Local.Pane(id)
		if !ok {
			if err := m.syncPane(id); err != nil {
				failed = append(failed, id)
			}
			continue
		}
		msg := nats.NewMsg("$KV." + PanesBucket + "." + m.key(id))
		b, ok := m.record(p, msg.Subject)
		if !ok {
			continue
		}
		msg.Data = b
		f, err := m.js.PublishMsgAsync(msg)
		if err != nil {
			failed = append(failed, id)
			continue
		}
		wait = append(wait, pending{id, f})
	}
	// One deadline for all the acknowledgements. A write whose stream
	// leader died after taking it is never acknowledged, nor failed
	// while this connection stays up: each wait must end at the
	// deadline, not only the first (a timer's channel fires once, and
	// a second unacknowledged write then held this loop, and every
	// later pane write of this host, for good).
	ctx, cancel := context.WithTimeout(m.ctx, pubAckWait)
	defer cancel()
	for _, w := range wait {
		select {
		case <-w.f.Ok():
		case <-w.f.Err():
			failed = append(failed, w.id)
		case <-ctx.Done():
			failed = append(failed, w.id)
		}
	}
	return failed
}

func (m *Member) syncPane(id string) error {
	ctx, cancel := context.WithTimeout(m.ctx, 3*time.Second)
	defer cancel()
	p, ok := m.o.Local.Pane(id)
	if !ok {
		err := m.panes.Delete(ctx, m.key(id))
		if err == nil || errors.Is(err, jetstream.ErrKeyNotFound) {
			m.mu.Lock()
			m.stored -= m.known[id]
			delete(m.known, id)
			m.mu.Unlock()
			return nil
		}
		return err
	}
	return m.putPane(ctx, p)
}

func (m *Member) putPane(ctx context.Context, p api.Pane) error {
	b, ok := m.record(p, "$KV."+PanesBucket+"."+m.key(p.ID))
	if !ok {
		return nil
	}
	_, err := m.panes.Put(ctx, m.key(p.ID), b)
	return err
}

// record encodes a pane's record for the bucket and books its room in
// the host's quota; false when it has none (the pane stays out of the
// fleet, or keeps its last state there) or cannot be encoded.
func (m *Member) record(p api.Pane, subject string) ([]byte, bool) {
	b, err := fitPane(PaneRecord{Host: m.o.Name, Pane: p, Sent: time.Now().UTC()})
	if err != nil {
		m.setErr(err)
		return nil, false
	}
	size := storedSize(subject, len(b))
	m.mu.Lock()
	old, had := m.known[p.ID]
	room := (had || len(m.known) < hostPanes) && m.stored-old+size <= hostBytes
	if room {
		m.known[p.ID], m.stored = size, m.stored-old+size
	}
	m.mu.Unlock()
	if !room && !m.overQuota.Swap(true) {
		m.setErr(fmt.Errorf("this host's panes fill its quota in the fleet (%d panes, %d MiB); the others are not shown there", hostPanes, hostBytes>>20))
	}
	return b, room
}

// syncAll writes every pane and deletes the host's keys of panes gone.
// The heartbeat goes first: a host forgotten while connected writes its
// panes again, and its heartbeat was removed with them. Were the panes
// in first and the host gone before its next heartbeat, the views (which
// drop a host at its heartbeat's removal) would keep its panes with no
// heartbeat to age: never shown unreachable, never forgotten by time.
func (m *Member) syncAll() error {
	if err := m.beat(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
	defer cancel()
	have := map[string]bool{}
	for _, p := range m.o.Local.Panes() {
		have[m.key(p.ID)] = true
		if err := m.putPane(ctx, p); err != nil {
			return err
		}
	}
	keys, err := m.kvKeys(ctx, PanesBucket, m.o.Name+".")
	if err != nil {
		return err
	}
	var stale []string
	for _, k := range keys {
		if !have[k] && k != m.key(aliveKey) {
			stale = append(stale, k)
		}
	}
	for _, k := range stale {
		if err := m.panes.Delete(ctx, k); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return err
		}
	}
	// Panes gone while their removal went unseen give their room back.
	m.mu.Lock()
	for id, size := range m.known {
		if !have[m.key(id)] {
			delete(m.known, id)
			m.stored -= size
		}
	}
	m.mu.Unlock()
	return nil
}

// publishLoop sends queued events to the stream when new ones come, and
// now and then for those queued while the fleet was away.
func (m *Member) publishLoop() {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.evWake:
		case <-t.C:
		}
		m.publishPending()
	}
}

// streamSeqHeader carries the host's own event number.
const streamSeqHeader = "Corral-Seq"

// publishPending sends the queued events to the stream in order, each
// with an id the stream deduplicates by; after a reconnect it first asks
// the stream for the host's last event there, and sends only newer ones:
// none twice, none lost.
func (m *Member) publishPending() {
	m.mu.Lock()
	resynced := m.resynced
	m.mu.Unlock()
	if last, ok := m.streamLast(resynced); ok {
		m.mu.Lock()
		i := 0
		for i < len(m.queue) && m.queue[i].Seq <= last {
			i++
		}
		m.queue = m.queue[i:]
		m.mu.Unlock()
	}
	for m.ctx.Err() == nil {
		m.mu.Lock()
		if len(m.queue) == 0 {
			m.mu.Unlock()
			return
		}
		ev := m.queue[0]
		m.mu.Unlock()
		b, err := fitEvent(Event{Host: m.o.Name, Event: ev})
		if err != nil {
			m.setErr(err)
			m.dropped.Add(1)
			m.dropQueued(ev.Seq)
			continue
		}
		msg := nats.NewMsg(subjEvents + m.o.Name)
		msg.Data = b
		msg.Header.Set(streamSeqHeader, strconv.FormatUint(ev.Seq, 10))
		ctx, cancel := context.WithTimeout(m.ctx, 3*time.Second)
		_, err = m.js.PublishMsg(ctx, msg, jetstream.WithMsgID(m.o.Name+":"+strconv.FormatUint(ev.Seq, 10)))
		cancel()
		if err != nil {
			return // kept; tried again later
		}
		m.published.Add(1)
		m.dropQueued(ev.Seq)
	}
}

func (m *Member) dropQueued(seq uint64) {
	m.mu.Lock()
	if len(m.queue) > 0 && m.queue[0].Seq == seq {
		m.queue = m.queue[1:]
	}
	m.mu.Unlock()
}

// streamLast asks the stream, once per connection, for this host's last
// event number there.
func (m *Member) streamLast(conn chan struct{}) (uint64, bool) {
	m.mu.Lock()
	asked := m.askedFor == conn
	m.mu.Unlock()
	if asked {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(m.ctx, 3*time.Second)
	defer cancel()
	msg, err := m.events.GetLastMsgForSubject(ctx, subjEvents+m.o.Name)
	var last uint64
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
	case err != nil:
		return 0, false
	default:
		last, _ = strconv.ParseUint(msg.Header.Get(streamSeqHeader), 10, 64)
	}
	m.mu.Lock()
	m.askedFor = conn
	m.mu.Unlock()
	return last, true
}

// scanLoop counts the daemon's panes for the heartbeat and publishes a
// pane that started without a change yet. It runs apart from the
// heartbeat: a pane slow to answer delays this, never the heartbeat.
func (m *Member) scanLoop() {
	t := time.NewTicker(HeartbeatEvery)
	defer t.Stop()
	for {
		panes := m.o.Local.Panes()
		m.paneCount.Store(int64(len(panes)))
		m.mu.Lock()
		fresh := false
		for _, p := range panes {
			if _, ok := m.known[p.ID]; !ok {
				m.dirty[p.ID], fresh = true, true
			}
		}
		m.mu.Unlock()
		if fresh {
			m.poke()
		} else {
			m.overQuota.Store(false)
		}
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (m *Member) heartbeatLoop() {
	t := time.NewTicker(HeartbeatEvery)
	defer t.Stop()
	for {
		_ = m.beat() // counted in the member's last error
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (m *Member) beat() error {
	panes := int(m.paneCount.Load())
	hb := Heartbeat{Host: m.o.Name, HostID: m.o.HostID, Version: m.o.Version, Panes: panes, Jobs: int(m.jobs.Load()),
		MaxJobs: m.jobLimit(), Sent: time.Now().UTC()}
	if r := m.rights.Load(); r != nil {
		hb.Access = r.access()
	}
	b, _ := json.Marshal(hb)
	ctx, cancel := context.WithTimeout(m.ctx, 2*time.Second)
	defer cancel()
	if _, err := m.hosts.Put(ctx, m.o.Name, b); err != nil {
		err = fmt.Errorf("heartbeat: %w", err)
		if m.ctx.Err() == nil {
			m.setErr(err)
		}
		return err
	}
	if m.o.Watch {
		_, _ = m.panes.Put(ctx, m.key(aliveKey), []byte(hb.Sent.Format(time.RFC3339Nano)))
	}
	return nil
}

// Close leaves the connection (the host shows unreachable); with forget,
// the host's panes and heartbeat are removed from the fleet first.
func (m *Member) Close(forget bool) {
	m.leaving.Store(forget)
	if forget && m.o.Local != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		if keys, err := m.kvKeys(ctx, PanesBucket, m.o.Name+"."); err == nil {
			for _, k := range keys {
				_ = m.panes.Delete(ctx, k)
			}
		}
		_ = m.hosts.Delete(ctx, m.o.Name)
		cancel()
		if !m.o.Admin && m.o.Token != "" {
			// The name is free again for the fleet token.
			_, _ = m.nc.Request(subjUnenroll+m.o.Name, nil, 3*time.Second)
		}
	}
	m.cancel()
	m.stopWorker()
	m.wg.Wait()
	_ = m.nc.Drain()
	deadline := time.Now().Add(2 * time.Second)
	for !m.nc.IsClosed() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	m.nc.Close()
}

// Stats are a member's counters.
type Stats struct {
	Connected  bool   `json:"connected"`
	Server     string `json:"server"`
	Published  int64  `json:"events_published"`
	Queued     int    `json:"events_queued"`
	Dropped    int64  `json:"events_dropped"`
	RefusedOut int64  `json:"refused_by_server"`
	// RefusedAPI counts this host's own JetStream API requests (made by
	// the client library) that the server refused: a fault of this
	// corral's, never another host's doing.
	RefusedAPI int64  `json:"refused_own_api,omitempty"`
	BadIn      int64  `json:"refused_from_others"`
	LastError  string `json:"last_error,omitempty"`
}

// Stats says how the member is doing.
func (m *Member) Stats() Stats {
	m.mu.Lock()
	q := len(m.queue)
	m.mu.Unlock()
	s := Stats{Connected: m.nc.IsConnected(), Server: m.nc.ConnectedUrlRedacted(), Published: m.published.Load(), Queued: q,
		Dropped: m.dropped.Load(), RefusedOut: m.refusedOut.Load(), RefusedAPI: m.refusedAPI.Load(), BadIn: m.badIn.Load() + m.view.bad.Load()}
	if p := m.lastErr.Load(); p != nil {
		s.LastError = *p
	}
	return s
}

// Panes is every host's panes, by host then start order of their ids.
func (m *Member) Panes() []PaneRecord { return m.view.panesList() }

// PaneFilter keeps the panes of some hosts, or in some states; an empty
// field keeps all. Hosts are glob patterns (path.Match).
type PaneFilter struct {
	Hosts  []string
	States []string
}

// Keep says whether a pane passes the filter.
func (f PaneFilter) Keep(p PaneRecord) bool {
	return (len(f.Hosts) == 0 || MatchHost(f.Hosts, p.Host)) && (len(f.States) == 0 || slices.Contains(f.States, p.State))
}

// MatchHost says whether a host's name matches one of the patterns
// (globs as path.Match: web-*, db-?); a malformed pattern matches as
// plain text.
func MatchHost(patterns []string, host string) bool {
	for _, p := range patterns {
		if ok, err := path.Match(p, host); ok || (err != nil && p == host) {
			return true
		}
	}
	return false
}

// Hosts is every host's status.
func (m *Member) Hosts() []HostStatus { return m.view.hostsList() }

// HostReachable says whether host's heartbeats arrive.
func (m *Member) HostReachable(host string) bool {
	h, ok := m.view.host(host)
	return ok && !h.seen.IsZero() && time.Since(h.seen) < Unreachable && h.problem == ""
}

// PaneOf finds a pane of a host by id or name in the view.
func (m *Member) PaneOf(host, ref string) (PaneRecord, bool) {
	for _, p := range m.view.panesList() {
		if p.Host == host && (p.ID == ref || p.Name == ref) {
			return p, true
		}
	}
	return PaneRecord{}, false
}

// FollowEvents calls fn with the fleet's events (host "" for all) from
// the stream: those after streamSeq (0: only new ones), until ctx ends.
// An ordered consumer resumes where it was after a reconnect.
// ready, if set, is called once the stream is followed.
func (m *Member) FollowEvents(ctx context.Context, host string, since time.Time, ready func(), fn func(Event) error) error {
	filter := subjEvents + "*"
	if host != "" {
		filter = subjEvents + host
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, DeliverPolicy: jetstream.DeliverNewPolicy}
	if !since.IsZero() {
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	cons, err := m.js.OrderedConsumer(ctx, EventsStream, cfg)
	if err != nil {
		return fmt.Errorf("follow the fleet's events: %w", err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("follow the fleet's events: %w", err)
	}
	go func() {
		<-ctx.Done()
		it.Stop()
	}()
	if ready != nil {
		ready()
	}
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("the fleet's event stream: %w", err)
		}
		ev, ok := m.parseEvent(msg)
		if !ok {
			continue
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
}

func (m *Member) parseEvent(msg jetstream.Msg) (Event, bool) {
	var ev Event
	var hdr struct {
		Host string `json:"host"`
	}
	host := strings.TrimPrefix(msg.Subject(), subjEvents)
	if json.Unmarshal(msg.Data(), &hdr) != nil || json.Unmarshal(msg.Data(), &ev.Event) != nil || hdr.Host != host {
		m.badIn.Add(1)
		return ev, false
	}
	ev.Host = host
	if md, err := msg.Metadata(); err == nil {
		ev.StreamSeq = md.Sequence.Stream
	}
	return ev, true
}
