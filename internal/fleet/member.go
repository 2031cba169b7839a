package fleet

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/eventlog"
)

// SetupWait bounds a member's set-up: the hub's buckets and streams made
// or found. Making a bucket on file storage took over 10 s on a loaded
// 2-core machine (a hub's first start, every process of a test suite at
// once). A command that asks the daemon to join or start a fleet waits
// this much longer for its answer.
const SetupWait = 30 * time.Second

// HubStartWait bounds a hub's NATS server's start: it opens its JetStream
// store before it listens, and on a loaded machine (a test run of every
// package under the race detector) that took over 10 s.
const HubStartWait = 30 * time.Second

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

	// takeHook, in tests, is called at each stage of taking a job.
	takeHook func(m *Member, stage takeStage)
	// claimAnswerLost, in tests, says a claim record's write went through
	// and its answer is lost.
	claimAnswerLost func(rec claimRecord) bool
	// claimWriteLost, in tests, says a try of a claim record's write
	// timed out before it reached the fleet.
	claimWriteLost func(rec claimRecord) bool
	// queueAnswerLost, in tests, says a job message was stored on the
	// queue and its answer lost (a cancel or a timeout while it was
	// written).
	queueAnswerLost func() bool
	// ackWait, in tests, replaces jobAckWait for the consumers this host
	// makes (shared with the fleet's other hosts: every host that takes
	// jobs in the test's fleet should say the same).
	ackWait time.Duration
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
	// fenced counts the job attempts this host took off the queue and did
	// not start: another host had claimed them, or their caller gave them up.
	fenced atomic.Int64
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
	ctx, cancel := context.WithTimeout(ctx, SetupWait)
	defer cancel()
	if m.o.Admin {
		if err := jetStreamReady(ctx, js); err != nil {
			return err
		}
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

// jetStreamReady waits for the fleet's JetStream to answer. The servers of
// a new cluster leave its API's requests unanswered, or answer that it is
// unavailable, until they have elected their meta leader: a bucket asked
// for before then waited out the whole set-up (SetupWait) for an answer
// that never came, though the leader was there seconds later, and a join
// told "unavailable" failed.
func jetStreamReady(ctx context.Context, js jetstream.JetStream) error {
	for {
		try, cancel := context.WithTimeout(ctx, jsTryWait)
		_, err := js.AccountInfo(try)
		cancel()
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("the fleet's JetStream did not answer within %v: %w", SetupWait, err)
		case !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, jetstream.ErrJetStreamNotEnabled) && !jetStreamUnavailable(err):
			return fmt.Errorf("the fleet's JetStream: %w", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// jetStreamUnavailable says err is the servers' "JetStream system
// temporarily unavailable" (503, error code 10008): a cluster's servers
// answer so while they elect their meta leader, as a new cluster's may for
// seconds. nats.go's own consumer creation tries again on it too.
func jetStreamUnavailable(err error) bool {
	var apiErr *jetstream.APIError
	// The jetstream package does not name the code; nats.go's older API
	// does.
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.ErrorCode(nats.JSErrCodeJetStreamNotAvailable)
}

// jsTryWait bounds one try of jetStreamReady.
const jsTryWait = 2 * time.Second

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
