package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-dev/corral/internal/eventlog"
)

// view is what a member knows of every host, from the buckets. It takes
// at most MaxHostRecords records of at most MaxRecord bytes from a host:
// a bigger or malformed record is skipped and counted, unread.
type view struct {
	mu    sync.Mutex
	panes map[string]paneSeen
	hosts map[string]*hostSeen
	// count is each host's records here; gone is when a host's heartbeat
	// was removed (the host left or was revoked): its records written
	// before then are forgotten, and not taken again.
	count map[string]int
	gone  map[string]time.Time
	bad   atomic.Int64
	// panesAlive is when this host's alive key last came back through
	// the pane watcher.
	panesAlive time.Time
}

// aliveKey is, under HOST., the key a host rewrites every second in the
// pane bucket, proving that its pane watcher still delivers.
const aliveKey = "_alive"

type paneSeen struct {
	rec     PaneRecord
	created time.Time // the record's time in the bucket
}

type hostSeen struct {
	hb      Heartbeat
	seen    time.Time // here, when its last heartbeat came
	problem string
}

func newView() *view {
	return &view{panes: map[string]paneSeen{}, hosts: map[string]*hostSeen{}, count: map[string]int{}, gone: map[string]time.Time{}}
}

func (v *view) panesList() []PaneRecord {
	v.mu.Lock()
	out := make([]PaneRecord, 0, len(v.panes))
	for _, p := range v.panes {
		out = append(out, p.rec)
	}
	v.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Host != out[j].Host {
			return out[i].Host < out[j].Host
		}
		return out[i].Since < out[j].Since
	})
	return out
}

// host returns what the view knows of one host.
func (v *view) host(name string) (hostSeen, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	h, ok := v.hosts[name]
	if !ok {
		return hostSeen{}, false
	}
	return *h, true
}

func (v *view) hostsList() []HostStatus {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := []HostStatus{}
	for name, h := range v.hosts {
		s := HostStatus{Host: name, Panes: v.count[name], Jobs: h.hb.Jobs, Version: h.hb.Version, MaxJobs: h.hb.MaxJobs, Access: h.hb.Access, Problem: h.problem}
		if !h.seen.IsZero() {
			s.LastSeen = h.seen.UTC().Format(eventlog.TimeFormat)
			s.Reachable = time.Since(h.seen) < Unreachable && h.problem == ""
			if !s.Reachable {
				s.UnreachableFor = int64(time.Since(h.seen) / time.Second)
			}
			s.AnyHostJobs = s.Reachable && s.MaxJobs > 0
		}
		out = append(out, s)
	}
	for name, n := range v.count {
		if _, ok := v.hosts[name]; !ok && n > 0 {
			out = append(out, HostStatus{Host: name, Panes: n, Problem: "never sent a heartbeat"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out
}

// skewed says whether a host's clock is too far from the server's.
func skewed(sent, server time.Time) bool {
	d := sent.Sub(server)
	return d > MaxClockSkew || d < -MaxClockSkew
}

// put keeps a record (the view's lock held); false when its host has
// its quota of records here already.
func (v *view) put(key string, p paneSeen) bool {
	if _, ok := v.panes[key]; !ok {
		if v.count[p.rec.Host] >= MaxHostRecords {
			return false
		}
		v.count[p.rec.Host]++
	}
	v.panes[key] = p
	return true
}

// drop forgets a record (the view's lock held).
func (v *view) drop(key string) (PaneRecord, bool) {
	p, ok := v.panes[key]
	if !ok {
		return PaneRecord{}, false
	}
	delete(v.panes, key)
	if v.count[p.rec.Host]--; v.count[p.rec.Host] <= 0 {
		delete(v.count, p.rec.Host)
	}
	return p.rec, true
}

// paneRecord reads a pane record; false when it is too big, malformed,
// or not the host's own.
func paneRecord(e jetstream.KeyValueEntry, host string) (PaneRecord, bool) {
	var rec PaneRecord
	if len(e.Value()) > MaxRecord || json.Unmarshal(e.Value(), &rec) != nil || rec.Host != host || e.Key() != rec.Host+"."+rec.ID {
		return rec, false
	}
	return rec, true
}

func (m *Member) watchPanes() {
	m.watch(PanesBucket, func(e jetstream.KeyValueEntry, _ bool) {
		host, id, _ := strings.Cut(e.Key(), ".")
		v := m.view
		if id == aliveKey {
			if host == m.o.Name {
				v.mu.Lock()
				v.panesAlive = time.Now()
				v.mu.Unlock()
			}
			return
		}
		if e.Operation() != jetstream.KeyValuePut {
			m.dropPane(e.Key())
			return
		}
		rec, ok := paneRecord(e, host)
		if !ok {
			// What the key holds is no record: its last state goes too.
			v.bad.Add(1)
			m.dropPane(e.Key())
			return
		}
		if skewed(rec.Sent, e.Created()) {
			v.bad.Add(1)
			return
		}
		v.mu.Lock()
		if gone, ok := v.gone[host]; ok && !e.Created().After(gone) {
			v.mu.Unlock()
			return
		}
		ok = v.put(e.Key(), paneSeen{rec, e.Created()})
		v.mu.Unlock()
		if !ok {
			v.bad.Add(1)
			return
		}
		if m.o.OnPane != nil {
			m.o.OnPane(rec, false)
		}
	}, func(keys map[string]bool) {
		v := m.view
		var gone []PaneRecord
		v.mu.Lock()
		for k := range v.panes {
			if !keys[k] {
				if rec, ok := v.drop(k); ok {
					gone = append(gone, rec)
				}
			}
		}
		v.mu.Unlock()
		for _, rec := range gone {
			if m.o.OnPane != nil {
				m.o.OnPane(rec, true)
			}
		}
	})
}

func (m *Member) dropPane(key string) {
	m.view.mu.Lock()
	old, ok := m.view.drop(key)
	m.view.mu.Unlock()
	if ok && m.o.OnPane != nil {
		m.o.OnPane(old, true)
	}
}

func (m *Member) watchHosts() {
	m.watch(HostsBucket, func(e jetstream.KeyValueEntry, initial bool) {
		v := m.view
		if e.Operation() != jetstream.KeyValuePut {
			// The host left, or was revoked: its records go too (the
			// hub removes them from the bucket without a marker each).
			var gone []PaneRecord
			v.mu.Lock()
			delete(v.hosts, e.Key())
			v.gone[e.Key()] = e.Created()
			for k, p := range v.panes {
				if p.rec.Host == e.Key() && !p.created.After(e.Created()) {
					v.drop(k)
					gone = append(gone, p.rec)
				}
			}
			v.mu.Unlock()
			for _, rec := range gone {
				if m.o.OnPane != nil {
					m.o.OnPane(rec, true)
				}
			}
			if e.Key() == m.o.Name && m.o.Local != nil && !m.leaving.Load() {
				// This host was forgotten while it was away: its
				// panes go back into the fleet.
				m.mu.Lock()
				m.dirty["*"] = true
				m.mu.Unlock()
				m.poke()
			}
			return
		}
		var hb Heartbeat
		if len(e.Value()) > maxHeartbeat || json.Unmarshal(e.Value(), &hb) != nil || hb.Host != e.Key() {
			v.bad.Add(1)
			return
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		h := v.hosts[e.Key()]
		if h == nil {
			h = &hostSeen{}
			v.hosts[e.Key()] = h
		}
		if skewed(hb.Sent, e.Created()) {
			v.bad.Add(1)
			h.problem = fmt.Sprintf("its clock is %v off the fleet's; its reports are refused until it is set right", hb.Sent.Sub(e.Created()).Round(time.Second))
			return
		}
		h.problem = ""
		h.hb = hb
		// A heartbeat the watch replays (its initial values, as after a
		// hub went away and the watcher was made again) counts from when
		// it was written: a host that died with the hub must not read
		// reachable for Unreachable more. One that comes live counts from
		// now, whatever this clock's offset from the server's.
		seen := time.Now()
		if age := time.Since(e.Created()); initial && age > 0 || age > Unreachable {
			seen = seen.Add(-age)
		}
		h.seen = seen
	}, nil)
}

// watch keeps a watcher on a bucket, making a new one when it ends or
// when the member's own heartbeat stops coming back through the hosts
// watcher (its consumer was on a server that went away). initDone is
// told the keys of the initial values, to forget those gone meanwhile.
func (m *Member) watch(bucket string, fn func(e jetstream.KeyValueEntry, initial bool), initDone func(keys map[string]bool)) {
	for m.ctx.Err() == nil {
		m.mu.Lock()
		restart := m.rewatch
		m.mu.Unlock()
		started := time.Now()
		updates, cancel, err := m.newWatcher(func(ctx context.Context) (<-chan jetstream.KeyValueEntry, error) {
			return m.kvWatch(ctx, bucket, "", false)
		}, restart)
		if err != nil {
			select {
			case <-m.ctx.Done():
				return
			case <-time.After(rewatchEvery - time.Since(started)):
				continue
			}
		}
		keys := map[string]bool{}
		initial := true
		failed := false
	read:
		for {
			select {
			case e, ok := <-updates:
				if !ok {
					failed = true
					break read
				}
				if e == nil {
					if initial && initDone != nil {
						initDone(keys)
					}
					initial = false
					continue
				}
				if initial {
					keys[e.Key()] = true
				}
				fn(e, initial)
			case <-restart:
				break read
			}
		}
		cancel()
		// A consumer that fails at once is not made again at once.
		if wait := rewatchEvery - time.Since(started); failed && wait > 0 {
			select {
			case <-m.ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}
}

// rewatchEvery is the least time between two makings of a bucket's
// watcher: while a stream has no leader (an election after a hub went),
// every attempt fails, and the first after the election succeeds.
const rewatchEvery = 250 * time.Millisecond

// A watcher's consumer is asked of a server that may not answer (while
// a cluster elects its leaders a request is dropped, and fails only at
// its timeout, 10 s): another attempt starts every createRetry while
// none has answered, up to createAttempts at once, and the first watcher
// made is taken. Waiting out each attempt put seconds between the
// election and a fresh view.
const (
	createRetry    = time.Second
	createAttempts = 4
)

// newWatcher makes a watcher with mk (kvWatch on a bucket) and returns
// it with the function that stops it; it gives up when the watchdog asks
// for a new watcher meanwhile. Attempts answered later are stopped at once.
func (m *Member) newWatcher(mk func(context.Context) (<-chan jetstream.KeyValueEntry, error), restart <-chan struct{}) (<-chan jetstream.KeyValueEntry, context.CancelFunc, error) {
	type made struct {
		ch     <-chan jetstream.KeyValueEntry
		cancel context.CancelFunc
		err    error
	}
	results := make(chan made, createAttempts)
	pending := 0
	attempt := func() {
		ctx, cancel := context.WithCancel(m.ctx)
		pending++
		go func() {
			ch, err := mk(ctx)
			results <- made{ch, cancel, err}
		}()
	}
	defer func() {
		go func(n int) {
			for range n {
				(<-results).cancel()
			}
		}(pending)
	}()
	attempt()
	tick := time.NewTicker(createRetry)
	defer tick.Stop()
	for {
		select {
		case r := <-results:
			pending--
			if r.err == nil {
				return r.ch, r.cancel, nil
			}
			r.cancel()
			if pending == 0 {
				return nil, nil, r.err
			}
		case <-tick.C:
			if pending < createAttempts {
				attempt()
			}
		case <-restart:
			return nil, nil, errRewatch
		case <-m.ctx.Done():
			return nil, nil, m.ctx.Err()
		}
	}
}

var errRewatch = errors.New("the watcher is made again")

// watchdog restarts the watchers when this host's own heartbeat has not
// come back through them for a while although the connection is up.
func (m *Member) watchdog() {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		// This host writes to both buckets every second: its heartbeat,
		// and its alive key among its panes.
		m.view.mu.Lock()
		h := m.view.hosts[m.o.Name]
		last := m.view.panesAlive
		if h == nil {
			last = time.Time{}
		} else if h.seen.Before(last) {
			last = h.seen
		}
		m.view.mu.Unlock()
		m.mu.Lock()
		if m.nc.IsConnected() && time.Since(last) > 2*Unreachable/3 && time.Since(m.rewatched) > 2*Unreachable/3 {
			close(m.rewatch)
			m.rewatch = make(chan struct{})
			m.rewatched = time.Now()
		}
		m.mu.Unlock()
	}
}
