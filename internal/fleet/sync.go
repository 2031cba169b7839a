package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

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
