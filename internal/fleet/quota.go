package fleet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// keeper holds each host to its quota in the pane bucket. JetStream
// bounds a stream, and each subject of it, but not a host's share of the
// keys under HOST.; so the hub counts each host's records and bytes, and
// cuts off a host over its quota: it is disconnected, refused for
// QuotaPenalty, and its records are removed. The server itself bounds
// each record (the bucket's MaxValueSize) and the bucket (MaxBytes), so a
// host gets at most its quota and what it sends while the hub reacts.
//
// The keeper subscribes to the bucket's subjects, reads the bucket once
// (headers only), then takes each record as it is published: a plain
// subscription costs the hub much less than a consumer or the bucket's
// republishing, and sees a flood before the bucket stores it. A record
// the bucket refuses (too big, or the bucket full) is counted all the
// same until its key is written again: only when a host floods the
// bucket. A record lost on the way here makes it read the bucket again.
//
// It also sweeps the markers of removed panes once every watcher has had
// them: they would fill an honest host's quota over months.
type keeper struct {
	h      *Hub
	nc     *nats.Conn
	js     jetstream.JetStream
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	hosts map[string]*hostUse
	// following is set once the keeper has read the bucket and follows it.
	following atomic.Bool
	cutOffs   atomic.Int64
	// headless is the hosts the last tidy found with records and no
	// heartbeat (tidy's own: no lock).
	headless map[string]bool
}

// hostUse is a host's share of the pane bucket.
type hostUse struct {
	records, bytes int64
	keys           map[string]keyUse
	cutting        bool
}

// keyUse is the last message of a key.
type keyUse struct {
	size    int64
	deleted bool
	at      time.Time // when the keeper saw it
}

const (
	panesPrefix = "$KV." + PanesBucket + "."
	// markerAge is how long the marker of a removed pane stays: a view
	// away longer reads the bucket anew.
	markerAge = 30 * time.Minute
	// kvOperation is the header that marks a key's removal.
	kvOperation = "KV-Operation"
)

// startKeeper starts h.keeper.
func startKeeper(h *Hub) error {
	// In process, the connection needs no TLS: a nats:// address keeps
	// the client from asking for it.
	nc, err := nats.Connect(nats.DefaultURL, nats.InProcessServer(h.srv), nats.Token(h.AdminToken()),
		nats.Name(clientNamePrefix+"hub-keeper"), nats.MaxReconnects(-1),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		return fmt.Errorf("fleet hub: its own connection: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return fmt.Errorf("fleet hub: its own connection: %w", err)
	}
	k := &keeper{h: h, nc: nc, js: js, hosts: map[string]*hostUse{}}
	k.ctx, k.cancel = context.WithCancel(context.Background())
	h.keeper = k // before a host can be cut off
	if _, err := nc.QueueSubscribe(subjHubJoin, "hubs", h.serveHubJoin); err != nil {
		nc.Close()
		return fmt.Errorf("fleet hub: its own connection: %w", err)
	}
	// The server has the subscription once the flush is answered: a hub
	// that has started answers join-hub at once.
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		nc.Close()
		return fmt.Errorf("fleet hub: its own connection: %w", err)
	}
	if h.routeURL != "" {
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			h.syncAuth(k.ctx, js)
		}()
	}
	k.wg.Add(3)
	go k.follow()
	go k.sweepLoop()
	go k.tidyLoop()
	return nil
}

func (k *keeper) stop() {
	k.cancel()
	k.wg.Wait()
	k.nc.Close()
}

// follow reads the bucket, then follows its records, anew after a gap.
// The bucket is made by the hub's own member, after the hub starts.
func (k *keeper) follow() {
	defer k.wg.Done()
	for k.ctx.Err() == nil {
		start := time.Now()
		err := k.followOnce()
		if k.ctx.Err() != nil {
			return
		}
		if k.following.Load() {
			k.h.logf("fleet: the quota keeper reads the pane bucket again: %v", err)
		}
		select {
		case <-k.ctx.Done():
			return
		case <-time.After(max(250*time.Millisecond, time.Second-time.Since(start))):
		}
	}
}

func (k *keeper) followOnce() error {
	sub, err := k.nc.SubscribeSync(panesPrefix + ">")
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	// A flood waits here rather than being dropped (a drop costs a
	// reading of the whole bucket).
	_ = sub.SetPendingLimits(1<<20, 256<<20)
	if err := k.nc.FlushTimeout(5 * time.Second); err != nil {
		return err
	}
	hosts, err := k.read()
	if err != nil {
		return err
	}
	k.mu.Lock()
	k.hosts = hosts
	var over []string
	for host, u := range hosts {
		if u.over() {
			u.cutting = true
			over = append(over, host)
		}
	}
	k.mu.Unlock()
	for _, host := range over {
		k.cut(host)
	}
	k.following.Store(true)
	// Every record published since the subscription comes here, in
	// order: those the reading saw too end in the same state.
	for {
		msg, err := sub.NextMsgWithContext(k.ctx)
		if err != nil {
			return err
		}
		if n, _ := sub.Dropped(); n > 0 {
			return fmt.Errorf("%d records were not seen", n)
		}
		hdr := msg.Size() - len(msg.Subject) - len(msg.Reply) - len(msg.Data)
		if hdr+len(msg.Data) > MaxRecord {
			continue // the bucket refuses it
		}
		use := keyUse{size: int64(len(msg.Subject) + hdr + len(msg.Data) + 30), deleted: msg.Header.Get(kvOperation) != "", at: time.Now()}
		k.mu.Lock()
		host, over := k.take(k.hosts, msg.Subject, use)
		k.mu.Unlock()
		if over {
			k.cut(host)
		}
	}
}

// read reads the last record of each key in the bucket.
func (k *keeper) read() (map[string]*hostUse, error) {
	hosts := map[string]*hostUse{}
	ctx, cancel := context.WithTimeout(k.ctx, time.Minute)
	defer cancel()
	st, err := k.js.Stream(ctx, "KV_"+PanesBucket)
	if err != nil {
		return nil, err
	}
	if st.CachedInfo().State.Msgs == 0 {
		return hosts, nil
	}
	legacy, err := k.nc.JetStream()
	if err != nil {
		return nil, err
	}
	sub, err := legacy.SubscribeSync(panesPrefix+">", nats.BindStream("KV_"+PanesBucket), nats.OrderedConsumer(),
		nats.DeliverLastPerSubject(), nats.HeadersOnly())
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	for {
		wait, cancel := context.WithTimeout(ctx, 5*time.Second)
		msg, err := sub.NextMsgWithContext(wait)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("reading the pane bucket: %w", err)
		}
		md, err := msg.Metadata()
		if err != nil {
			continue
		}
		// The headers the record was sent with, not the one the server
		// added to tell its size.
		hdr := msg.Size() - len(msg.Subject) - len(msg.Reply) - len(msg.Data)
		size := lastValue(msg.Header, nats.MsgSize)
		hdr -= len(nats.MsgSize) + len(size) + 4
		data, _ := strconv.Atoi(size)
		k.take(hosts, msg.Subject, keyUse{size: int64(len(msg.Subject) + max(hdr, 0) + data + 30),
			deleted: msg.Header.Get(kvOperation) != "", at: md.Timestamp})
		if md.NumPending == 0 {
			return hosts, nil
		}
	}
}

// lastValue is a header's last value: the server's, when the sender gave
// one of the same name.
func lastValue(h nats.Header, key string) string {
	if vs := h[key]; len(vs) > 0 {
		return vs[len(vs)-1]
	}
	return ""
}

func (u *hostUse) over() bool { return u.records > MaxHostRecords || u.bytes > MaxHostBytes }

// take counts a record of a host (the lock held); over says the host
// just went over its quota.
func (k *keeper) take(hosts map[string]*hostUse, subject string, use keyUse) (host string, over bool) {
	host, key, ok := strings.Cut(strings.TrimPrefix(subject, panesPrefix), ".")
	if !ok {
		return "", false
	}
	u := hosts[host]
	if u == nil {
		u = &hostUse{keys: map[string]keyUse{}}
		hosts[host] = u
	}
	if old, had := u.keys[key]; had {
		u.bytes -= old.size
		if !old.deleted {
			u.records--
		}
	}
	u.keys[key] = use
	u.bytes += use.size
	if !use.deleted {
		u.records++
	}
	if u.cutting || !u.over() {
		return host, false
	}
	u.cutting = true
	return host, true
}

// cut starts cutting off a host over its quota.
func (k *keeper) cut(host string) {
	k.mu.Lock()
	why := "its records are over its quota"
	if u := k.hosts[host]; u != nil {
		why = fmt.Sprintf("it went over its quota in the fleet's pane bucket (%d records, %d KiB; a host may keep %d records, %d MiB)",
			u.records, u.bytes>>10, MaxHostRecords, MaxHostBytes>>20)
	}
	k.mu.Unlock()
	k.wg.Add(1)
	go k.cutOff(host, why)
}

// cutOff disconnects a host over its quota, refuses it for QuotaPenalty,
// and removes its records: again after a failed removal (the store busy,
// a stream being updated), since no later record of the host may come to
// start another.
func (k *keeper) cutOff(host, why string) {
	defer k.wg.Done()
	k.h.auth.bar(host, time.Now().Add(QuotaPenalty), why)
	k.h.kick(host)
	k.cutOffs.Add(1)
	wait := time.Second
	for try := 1; ; try++ {
		var err error
		if k.h.cutFails != nil && k.h.cutFails(host) {
			err = errors.New("failed by the test")
		} else {
			err = k.h.forget(host, false)
		}
		if err == nil {
			k.h.logf("fleet: host %s is refused for %v and its records are removed: %s", host, QuotaPenalty, why)
			return
		}
		if k.ctx.Err() != nil {
			return // the hub is closing
		}
		if try == cutTries {
			k.mu.Lock()
			if u := k.hosts[host]; u != nil {
				u.cutting = false
			}
			k.mu.Unlock()
			k.h.logf("fleet: host %s is refused for %v: %s; removing its records failed %d times: %v", host, QuotaPenalty, why, try, err)
			return
		}
		k.h.logf("fleet: host %s: removing its records failed (%v); trying again in %v", host, err, wait)
		select {
		case <-k.ctx.Done():
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// cutTries bounds the tries of cutOff's removal (1 + 2 + 4 + 8 s apart).
const cutTries = 5

// purged starts a host's count anew after its records were removed.
func (k *keeper) purged(host string) {
	k.mu.Lock()
	delete(k.hosts, host)
	k.mu.Unlock()
}

// usage is a host's records and bytes in the pane bucket.
func (k *keeper) usage(host string) (records, bytes int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if u := k.hosts[host]; u != nil {
		return u.records, u.bytes
	}
	return 0, 0
}

func (k *keeper) sweepLoop() {
	defer k.wg.Done()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-k.ctx.Done():
			return
		case <-t.C:
		}
		k.sweep(time.Now().Add(-markerAge))
	}
}

// sweep removes the markers of panes removed before a time.
func (k *keeper) sweep(before time.Time) {
	type old struct{ host, key string }
	var olds []old
	k.mu.Lock()
	for host, u := range k.hosts {
		for key, use := range u.keys {
			if use.deleted && use.at.Before(before) {
				olds = append(olds, old{host, key})
			}
		}
	}
	k.mu.Unlock()
	if len(olds) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(k.ctx, time.Minute)
	defer cancel()
	st, err := k.js.Stream(ctx, "KV_"+PanesBucket)
	if err != nil {
		return
	}
	for _, o := range olds {
		subject := panesPrefix + o.host + "." + o.key
		m, err := st.GetLastMsgForSubject(ctx, subject)
		if err == nil && m.Header.Get(kvOperation) != "" {
			// Only the marker and what came before it: a key written
			// again since keeps its record.
			err = st.Purge(ctx, jetstream.WithPurgeSubject(subject), jetstream.WithPurgeSequence(m.Sequence+1))
		}
		if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			if ctx.Err() != nil {
				return
			}
			continue
		}
		k.mu.Lock()
		if u := k.hosts[o.host]; u != nil {
			if use, ok := u.keys[o.key]; ok && use.deleted {
				delete(u.keys, o.key)
				u.bytes -= use.size
			}
			if len(u.keys) == 0 && !u.cutting {
				delete(k.hosts, o.host)
			}
		}
		k.mu.Unlock()
	}
}

// purgePanes removes a host's records from the pane bucket. A host just
// disconnected may still have records on their way in (the server
// finishes what it read of the connection, and the stream takes its
// messages in turn): a marker on one of the host's keys, once stored,
// comes after all those queued, and each purge takes everything of the
// host's up to its marker; the purges go on until the host's keys stay
// empty. A host connected again meanwhile (one that left, back with the
// fleet token) writes its own records.
func (h *Hub) purgePanes(ctx context.Context, host string) error {
	k := h.keeper
	st, err := k.js.Stream(ctx, "KV_"+PanesBucket)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for quiet := 0; quiet < 2; {
		marker := nats.NewMsg(panesPrefix + host + "." + aliveKey)
		marker.Header.Set(kvOperation, "PURGE")
		marker.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
		ack, err := k.js.PublishMsg(ctx, marker)
		if err != nil {
			return err
		}
		if err := st.Purge(ctx, jetstream.WithPurgeSubject(panesPrefix+host+".>"), jetstream.WithPurgeSequence(ack.Sequence+1)); err != nil {
			return err
		}
		k.purged(host)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if h.connected(host) {
			return nil
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(panesPrefix+host+".>"))
		if err != nil {
			return err
		}
		if len(info.State.Subjects) == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
	return nil
}

// forget removes a host's records from the store: its panes and its
// heartbeat (each view then forgets the host and its panes), and with
// all, its events, the job output it sent or was sent, and the jobs
// queued for it. A stream not made yet holds nothing to remove.
func (h *Hub) forget(host string, all bool) error {
	k := h.keeper
	ctx, cancel := context.WithTimeout(k.ctx, 10*time.Second)
	defer cancel()
	var errs []error
	purge := func(stream string, subjects ...string) {
		st, err := k.js.Stream(ctx, stream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("stream %s: %w", stream, err))
			return
		}
		for _, s := range subjects {
			if err := st.Purge(ctx, jetstream.WithPurgeSubject(s)); err != nil {
				errs = append(errs, fmt.Errorf("stream %s: %w", stream, err))
			}
		}
	}
	if err := h.purgePanes(ctx, host); err != nil {
		errs = append(errs, fmt.Errorf("pane bucket: %w", err))
	}
	if hosts, err := k.js.KeyValue(ctx, HostsBucket); err == nil {
		if err := hosts.Purge(ctx, host); err != nil {
			errs = append(errs, fmt.Errorf("hosts bucket: %w", err))
		}
	} else if !errors.Is(err, jetstream.ErrBucketNotFound) {
		errs = append(errs, fmt.Errorf("hosts bucket: %w", err))
	}
	if all {
		purge(EventsStream, subjEvents+host)
		purge(OutputStream, subjJobOut+"*."+host+".>", subjJobOut+host+".>")
		purge(JobsStream, subjJobFor+host)
		if err := k.js.DeleteConsumer(ctx, JobsStream, jobConsumer(host)); err != nil &&
			!errors.Is(err, jetstream.ErrConsumerNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
			errs = append(errs, fmt.Errorf("job queue: %w", err))
		}
	}
	return errors.Join(errs...)
}
