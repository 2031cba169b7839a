// Package eventlog keeps pane state changes: an append-only NDJSON file
// that survives daemon restarts (bounded by rotation), and a hub that
// hands new events to subscribers without ever waiting for them.
package eventlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Event is one state change of one pane. Its JSON shape is a public
// interface: keep it stable.
type Event struct {
	Seq          uint64    `json:"seq"`
	Time         time.Time `json:"time"`
	Pane         string    `json:"pane"`
	Name         string    `json:"name"`
	Agent        string    `json:"agent"`
	State        string    `json:"state"`
	Kind         string    `json:"kind"`
	Message      string    `json:"message"`
	Source       string    `json:"source"`
	Rule         string    `json:"rule"`
	Previous     string    `json:"previous"`
	PreviousKind string    `json:"previous_kind"`
	ExitCode     *int      `json:"exit_code,omitempty"`
}

// MarshalJSON writes Time as RFC 3339 with milliseconds.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	return json.Marshal(struct {
		plain
		Time string `json:"time"`
	}{plain(e), e.Time.UTC().Format(TimeFormat)})
}

// TimeFormat is RFC 3339 with milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Defaults for the log.
const (
	DefaultMaxBytes = 8 << 20
	FileName        = "events.ndjson"
)

// Log is the event file. A crash loses at most the event being written:
// each event is one write(2) of one line to a file opened with O_APPEND.
type Log struct {
	path     string
	maxBytes int64

	mu   sync.Mutex // guards the fields that follow
	f    *os.File
	size int64
	seq  uint64
}

// Open opens (or creates) the log in dir and finds the last sequence number.
func Open(dir string, maxBytes int64) (*Log, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("event log: %w", err)
	}
	l := &Log{path: filepath.Join(dir, FileName), maxBytes: maxBytes}
	for _, p := range []string{l.path + ".1", l.path} {
		if evs, _, err := readFile(p); err == nil && len(evs) > 0 {
			l.seq = max(l.seq, evs[len(evs)-1].Seq)
		}
	}
	if err := l.openLocked(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Log) openLocked() error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("event log: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("event log: %w", err)
	}
	l.f, l.size = f, info.Size()
	return nil
}

// Append numbers the event, writes it, and returns it with its number.
func (l *Log) Append(e Event) (Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	e.Seq = l.seq
	line, err := json.Marshal(e)
	if err != nil {
		return e, err
	}
	line = append(line, '\n')
	if l.size+int64(len(line)) > l.maxBytes {
		if err := l.rotateLocked(); err != nil {
			return e, err
		}
	}
	n, err := l.f.Write(line)
	l.size += int64(n)
	if err != nil {
		return e, fmt.Errorf("event log: %w", err)
	}
	return e, nil
}

// rotateLocked keeps one older file: events.ndjson becomes events.ndjson.1.
func (l *Log) rotateLocked() error {
	l.f.Close()
	if err := os.Rename(l.path, l.path+".1"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("event log rotate: %w", err)
	}
	return l.openLocked()
}

// Close closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// Since returns logged events at or after t, oldest first, and how many
// malformed lines were skipped.
//
// The lock is held only while the files' bytes are read: decoding a full
// log takes long (seconds under the race detector), and every Append, so
// every pane's state change, would wait for it.
func (l *Log) Since(t time.Time) ([]Event, int, error) {
	var files [][]byte
	l.mu.Lock()
	for _, p := range []string{l.path + ".1", l.path} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			l.mu.Unlock()
			return nil, 0, fmt.Errorf("event log: %w", err)
		}
		files = append(files, b)
	}
	l.mu.Unlock()
	var out []Event
	skipped := 0
	for _, b := range files {
		evs, bad, _ := decode(bytes.NewReader(b))
		skipped += bad
		for _, e := range evs {
			if !e.Time.Before(t) {
				out = append(out, e)
			}
		}
	}
	return out, skipped, nil
}

// readFile reads events, skipping lines that are not events (a torn last
// line after a crash, garbage).
func readFile(path string) ([]Event, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	return decode(f)
}

func decode(r io.Reader) ([]Event, int, error) {
	var out []Event
	bad := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil || e.Seq == 0 {
			bad++
			continue
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return out, bad + 1, nil
	}
	return out, bad, nil
}
