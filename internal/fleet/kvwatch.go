package fleet

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Buckets are read through ordered consumers of the jetstream package,
// never through the bucket's own Watch or ListKeys: those create their
// consumers through the older JetStream client, which picks the API
// subject by the connected server's version, and while it reconnects
// knows none and falls back to the subject without the consumer's name
// and filter ($JS.API.CONSUMER.CREATE.STREAM). The request waits in the
// reconnect buffer, reaches the server once connected, and is refused:
// the permissions allow a member only the subject that binds the filter.
// The jetstream package always names consumer and filter.

// watchHeartbeat is how often a bucket's watcher hears from its
// consumer when nothing changes.
const watchHeartbeat = time.Second

// kvEntry is a bucket's record as an ordered consumer delivers it.
type kvEntry struct {
	bucket, key string
	value       []byte
	rev, delta  uint64
	created     time.Time
	op          jetstream.KeyValueOp
}

func (e *kvEntry) Bucket() string                  { return e.bucket }
func (e *kvEntry) Key() string                     { return e.key }
func (e *kvEntry) Value() []byte                   { return e.value }
func (e *kvEntry) Revision() uint64                { return e.rev }
func (e *kvEntry) Created() time.Time              { return e.created }
func (e *kvEntry) Delta() uint64                   { return e.delta }
func (e *kvEntry) Operation() jetstream.KeyValueOp { return e.op }

// kvWatch follows a bucket's keys under prefix ("" for all): the last
// record of each, then a nil entry (the initial values are done), then
// every change. The channel closes when ctx ends or the consumer fails.
func (m *Member) kvWatch(ctx context.Context, bucket, prefix string, headersOnly bool) (<-chan jetstream.KeyValueEntry, error) {
	subjPrefix := "$KV." + bucket + "."
	filter := subjPrefix + ">"
	if prefix != "" {
		filter = subjPrefix + prefix + ">"
	}
	// One attempt at each consumer (re)creation: the library's own
	// retries back off to 10 s between attempts, so a watcher made during
	// a stream leader's election came back seconds after the new leader.
	// The caller makes a new watcher at once instead (watch).
	cons, err := m.js.OrderedConsumer(ctx, "KV_"+bucket, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter},
		DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, HeadersOnly: headersOnly, MaxResetAttempts: 1})
	if err != nil {
		return nil, fmt.Errorf("watch the fleet's %s: %w", bucket, err)
	}
	// A consumer gone with its server is noticed by its missing
	// heartbeats: two of them (the library's default is 5 s each).
	it, err := cons.Messages(jetstream.PullHeartbeat(watchHeartbeat))
	if err != nil {
		return nil, fmt.Errorf("watch the fleet's %s: %w", bucket, err)
	}
	out := make(chan jetstream.KeyValueEntry, 256)
	// An empty bucket has no initial values: the marker comes at once.
	initial := true
	if info := cons.CachedInfo(); info != nil && info.NumPending == 0 {
		out <- nil
		initial = false
	}
	go func() {
		<-ctx.Done()
		it.Stop()
	}()
	go func() {
		defer close(out)
		for {
			msg, err := it.Next()
			if err != nil {
				return
			}
			md, err := msg.Metadata()
			if err != nil {
				continue
			}
			e := &kvEntry{bucket: bucket, key: strings.TrimPrefix(msg.Subject(), subjPrefix), value: msg.Data(),
				rev: md.Sequence.Stream, delta: md.NumPending, created: md.Timestamp}
			switch msg.Headers().Get(kvOperation) {
			case "DEL":
				e.op = jetstream.KeyValueDelete
			case "PURGE":
				e.op = jetstream.KeyValuePurge
			}
			select {
			case out <- e:
			case <-ctx.Done():
				return
			}
			if initial && md.NumPending == 0 {
				initial = false
				select {
				case out <- nil:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

// kvKeys lists the keys under prefix whose last record is a value.
func (m *Member) kvKeys(ctx context.Context, bucket, prefix string) ([]string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := m.kvWatch(ctx, bucket, prefix, true)
	if err != nil {
		return nil, err
	}
	var keys []string
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				return nil, fmt.Errorf("list the fleet's %s: the consumer ended", bucket)
			}
			if e == nil {
				return keys, nil
			}
			if e.Operation() == jetstream.KeyValuePut {
				keys = append(keys, e.Key())
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("list the fleet's %s: %w", bucket, ctx.Err())
		}
	}
}
