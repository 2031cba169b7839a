package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

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

// outputMaxAge is how long a job's lines, and its claim records, are kept.
const outputMaxAge = time.Hour

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
		{Name: OutputStream, Subjects: []string{subjJobOut + ">"}, MaxAge: outputMaxAge, MaxBytes: outputBytes,
			Duplicates: time.Minute, Replicas: replicas, MaxMsgSize: MaxMessage},
	} {
		c.Replicas = kept(c.Name, c.Replicas)
		if _, err := js.CreateOrUpdateStream(ctx, c); err != nil {
			return fmt.Errorf("fleet stream %s: %w", c.Name, err)
		}
	}
	return nil
}
