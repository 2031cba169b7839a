package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

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
