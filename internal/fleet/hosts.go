package fleet

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-dev/corral/internal/safefile"
)

// A host is its name in the fleet; a machine is its host id, made once
// in the state folder (fleet/host_id) and sent with every heartbeat. A
// machine that joins again under another name keeps its id: the hub then
// forgets the records of its old name, so its panes are not shown twice.

// LoadHostID reads this state folder's host id, making it the first time.
func LoadHostID(stateDir string) (string, error) {
	path := filepath.Join(Dir(stateDir), "host_id")
	b, err := safefile.ReadOwned(path, 1024)
	if err == nil {
		if id := strings.TrimSpace(string(b)); validHostID(id) {
			return id, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("fleet host id: %w", err)
	}
	id := secret()[:32]
	if err := os.MkdirAll(Dir(stateDir), 0o700); err != nil {
		return "", fmt.Errorf("fleet host id: %w", err)
	}
	if err := safefile.WriteAtomic(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("fleet host id: %w", err)
	}
	return id, nil
}

func validHostID(id string) bool {
	_, err := hex.DecodeString(id)
	return err == nil && len(id) == 32
}

// tidyEvery is how often the hub looks for hosts to forget.
const tidyEvery = 2 * time.Second

// tidyLoop forgets, now and then, the hosts the fleet no longer has: a
// name its machine left for another, a host unreachable longer than
// ForgetAfter, a host whose credential expired.
func (k *keeper) tidyLoop() {
	defer k.wg.Done()
	t := time.NewTicker(tidyEvery)
	defer t.Stop()
	for {
		select {
		case <-k.ctx.Done():
			return
		case <-t.C:
		}
		k.h.tidy(time.Now())
	}
}

// heartbeatSeen is a host's last heartbeat with the server's time of it.
type heartbeatSeen struct {
	hb Heartbeat
	at time.Time
}

// heartbeats reads every host's last heartbeat in the hosts bucket.
func (h *Hub) heartbeats(ctx context.Context) (map[string]heartbeatSeen, error) {
	kv, err := h.keeper.js.KeyValue(ctx, HostsBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	var keys []string
	for key := range lister.Keys() {
		keys = append(keys, key)
	}
	out := map[string]heartbeatSeen{}
	for _, key := range keys {
		e, err := kv.Get(ctx, key)
		if err != nil {
			continue // removed meanwhile
		}
		var hb Heartbeat
		if json.Unmarshal(e.Value(), &hb) != nil || hb.Host != key {
			continue
		}
		out[key] = heartbeatSeen{hb, e.Created()}
	}
	return out, nil
}

func (h *Hub) tidy(now time.Time) {
	ctx, cancel := context.WithTimeout(h.keeper.ctx, 10*time.Second)
	defer cancel()
	for _, name := range h.auth.expiredNow(now) {
		h.kick(name)
		if err := h.forget(name, true); err != nil {
			h.logf("fleet: host %s's credential expired, but not all its records could be removed: %v", name, err)
			continue
		}
		h.auth.markForgotten(name)
		h.logf("fleet: host %s's credential expired; its records are removed from the fleet", name)
	}
	hbs, err := h.heartbeats(ctx)
	if err != nil {
		return
	}
	newest := map[string]string{} // host id → the name of its newest heartbeat
	for name, s := range hbs {
		if id := s.hb.HostID; id != "" {
			if cur, ok := newest[id]; !ok || s.at.After(hbs[cur].at) {
				newest[id] = name
			}
		}
	}
	h.forgetHeadless(hbs)
	forgetAfter := time.Duration(h.forgetAfter.Load())
	for name, s := range hbs {
		why := ""
		switch {
		case s.hb.HostID != "" && newest[s.hb.HostID] != name:
			why = fmt.Sprintf("its machine joined again as %s", newest[s.hb.HostID])
		case forgetAfter > 0 && now.Sub(later(s.at, h.started)) > forgetAfter:
			// Counted from the hub's start at the earliest: a hub
			// that was down itself heard from nobody meanwhile.
			why = fmt.Sprintf("unreachable since %s (longer than %v)", s.at.Format(time.RFC3339), forgetAfter)
		default:
			continue
		}
		if h.connected(name) {
			continue
		}
		if err := h.forget(name, false); err != nil {
			h.logf("fleet: forget host %s (%s): %v", name, why, err)
			continue
		}
		h.logf("fleet: host %s is forgotten: %s", name, why)
	}
}

// forgetHeadless forgets the hosts that have records in the pane bucket
// but no heartbeat, and are not connected, at the second look in a row:
// the views show them reachable never, and nothing else removes them (a
// host forgotten while connected once wrote its panes again, then went
// before its next heartbeat). A connected host's heartbeat may be on its
// way, hence the second look.
func (h *Hub) forgetHeadless(hbs map[string]heartbeatSeen) {
	k := h.keeper
	if hbs == nil || !k.following.Load() {
		return
	}
	var headless []string
	k.mu.Lock()
	for name, u := range k.hosts {
		if _, ok := hbs[name]; !ok && u.records > 0 && !u.cutting {
			headless = append(headless, name)
		}
	}
	k.mu.Unlock()
	seen := map[string]bool{}
	for _, name := range headless {
		if h.connected(name) {
			continue
		}
		if !k.headless[name] {
			seen[name] = true
			continue
		}
		if err := h.forget(name, false); err != nil {
			seen[name] = true
			h.logf("fleet: forget host %s (records without a heartbeat): %v", name, err)
			continue
		}
		h.logf("fleet: host %s is forgotten: its records had no heartbeat", name)
	}
	k.headless = seen
}

// Forget removes a host's panes and heartbeat from the fleet: every view
// drops it. A host still connected would write them again, so it is
// refused: corral fleet invite NAME --revoke cuts a host off for good.
func (h *Hub) Forget(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if h.connected(name) {
		return fmt.Errorf("host %s is connected, and would send its panes again; to cut it off, corral fleet invite %s --revoke", name, name)
	}
	if err := h.forget(name, false); err != nil {
		return fmt.Errorf("forget host %s: %w", name, err)
	}
	h.logf("fleet: host %s is forgotten (corral fleet forget)", name)
	return nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
