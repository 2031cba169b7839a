package fleet

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-dev/corral/internal/eventlog"
)

// view is what a member knows of every host, from the buckets.
type view struct {
	mu    sync.Mutex
	panes map[string]PaneRecord
	hosts map[string]*hostSeen
	bad   atomic.Int64
	// panesAlive is when this host's alive key last came back through
	// the pane watcher.
	panesAlive time.Time
}

// aliveKey is, under HOST., the key a host rewrites every second in the
// pane bucket, proving that its pane watcher still delivers.
const aliveKey = "_alive"

type hostSeen struct {
	hb      Heartbeat
	seen    time.Time // here, when its last heartbeat came
	problem string
}

func newView() *view {
	return &view{panes: map[string]PaneRecord{}, hosts: map[string]*hostSeen{}}
}

func (v *view) panesList() []PaneRecord {
	v.mu.Lock()
	out := make([]PaneRecord, 0, len(v.panes))
	for _, p := range v.panes {
		out = append(out, p)
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

func (v *view) hostsList() []HostStatus {
	v.mu.Lock()
	defer v.mu.Unlock()
	count := map[string]int{}
	for _, p := range v.panes {
		count[p.Host]++
	}
	out := []HostStatus{}
	for name, h := range v.hosts {
		s := HostStatus{Host: name, Panes: count[name], Jobs: h.hb.Jobs, Version: h.hb.Version, MaxJobs: h.hb.MaxJobs, Problem: h.problem}
		if !h.seen.IsZero() {
			s.LastSeen = h.seen.UTC().Format(eventlog.TimeFormat)
			s.Reachable = time.Since(h.seen) < Unreachable && h.problem == ""
		}
		out = append(out, s)
	}
	for name, n := range count {
		if _, ok := v.hosts[name]; !ok {
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

func (m *Member) watchPanes() {
	m.watch(m.panes, func(e jetstream.KeyValueEntry) {
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
			v.mu.Lock()
			old, ok := v.panes[e.Key()]
			delete(v.panes, e.Key())
			v.mu.Unlock()
			if ok && m.o.OnPane != nil {
				m.o.OnPane(old, true)
			}
			return
		}
		var rec PaneRecord
		if err := json.Unmarshal(e.Value(), &rec); err != nil || rec.Host != host || e.Key() != rec.Host+"."+rec.ID {
			v.bad.Add(1)
			return
		}
		if skewed(rec.Sent, e.Created()) {
			v.bad.Add(1)
			return
		}
		v.mu.Lock()
		v.panes[e.Key()] = rec
		v.mu.Unlock()
		if m.o.OnPane != nil {
			m.o.OnPane(rec, false)
		}
	}, func(keys map[string]bool) {
		v := m.view
		var gone []PaneRecord
		v.mu.Lock()
		for k, rec := range v.panes {
			if !keys[k] {
				delete(v.panes, k)
				gone = append(gone, rec)
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

func (m *Member) watchHosts() {
	m.watch(m.hosts, func(e jetstream.KeyValueEntry) {
		v := m.view
		v.mu.Lock()
		defer v.mu.Unlock()
		if e.Operation() != jetstream.KeyValuePut {
			delete(v.hosts, e.Key())
			return
		}
		var hb Heartbeat
		if err := json.Unmarshal(e.Value(), &hb); err != nil || hb.Host != e.Key() {
			v.bad.Add(1)
			return
		}
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
		// A heartbeat older than Unreachable (the initial values of the
		// watch) does not make a host reachable.
		seen := time.Now()
		if age := time.Since(e.Created()); age > Unreachable {
			seen = seen.Add(-age)
		}
		h.seen = seen
	}, nil)
}

// watch keeps a watcher on a bucket, making a new one when it ends or
// when the member's own heartbeat stops coming back through the hosts
// watcher (its consumer was on a server that went away). initDone is
// told the keys of the initial values, to forget those gone meanwhile.
func (m *Member) watch(kv jetstream.KeyValue, fn func(jetstream.KeyValueEntry), initDone func(keys map[string]bool)) {
	for m.ctx.Err() == nil {
		w, err := kv.WatchAll(m.ctx)
		if err != nil {
			select {
			case <-m.ctx.Done():
				return
			case <-time.After(time.Second):
				continue
			}
		}
		m.mu.Lock()
		restart := m.rewatch
		m.mu.Unlock()
		keys := map[string]bool{}
		initial := true
	read:
		for {
			select {
			case e, ok := <-w.Updates():
				if !ok {
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
				fn(e)
			case <-restart:
				break read
			}
		}
		_ = w.Stop()
	}
}

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
