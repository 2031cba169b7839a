package pane

import (
	"fmt"
	"sync"
	"time"
)

// InputQueue bounds the writes waiting for the program to read them.
const InputQueue = 256

// GCPercent is the garbage-collection target (GOGC) of a process that
// keeps panes, unless the user set GOGC: its heap is mostly long-lived pane
// state (cells, history) and makes little garbage, so collecting sooner
// costs little CPU and keeps its resident memory near its live heap. At
// 300 spinning panes, 25 against 50: a tenth less of the daemon's memory,
// a GC twice as often (under 1 % of its CPU time).
const GCPercent = 25

// inputQueue is the input waiting for the program (keys, pastes, query
// answers), written in order by one writer. The writer runs only while
// there is some: an idle pane keeps neither a goroutine nor a queue.
type inputQueue struct {
	mu sync.Mutex // guards the fields that follow
	q  [][]byte
	// writing: a writer runs, or the terminal failed a write and none
	// will again (the queue then fills, and callers hear ErrNotReading).
	writing bool
	// room is closed when a write is taken off a full queue; made by the
	// first caller that waits for it.
	room chan struct{}
}

// push queues b unless the queue is full; it reports how many writes wait.
func (p *Pane) push(b []byte) (queued bool, waiting int, room <-chan struct{}) {
	in := &p.in
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.q) >= InputQueue {
		if in.room == nil {
			in.room = make(chan struct{})
		}
		return false, len(in.q), in.room
	}
	in.q = append(in.q, b)
	if !in.writing {
		in.writing = true
		go p.writeQueued()
	}
	return true, len(in.q), nil
}

// writeQueued writes the queue to the program until it is empty. Only it
// writes to the PTY; if the program stops reading, only it waits.
func (p *Pane) writeQueued() {
	in := &p.in
	for {
		in.mu.Lock()
		if len(in.q) == 0 {
			in.q, in.writing = nil, false
			in.mu.Unlock()
			return
		}
		b := in.q[0]
		in.q[0] = nil
		in.q = in.q[1:]
		if in.room != nil {
			close(in.room)
			in.room = nil
		}
		in.mu.Unlock()
		select {
		case <-p.done:
			p.unwritten.Add(-1)
			continue // the program is gone: the rest is dropped
		default:
		}
		_, err := p.src.Write(b)
		p.unwritten.Add(-1)
		if err != nil {
			return // writing stays set: nothing is written again
		}
	}
}

// enqueue queues bytes for the program, waiting at most wait for room.
func (p *Pane) enqueue(b []byte, wait time.Duration) error {
	p.unwritten.Add(1)
	var timeout <-chan time.Time
	for {
		queued, waiting, room := p.push(b)
		if queued {
			return nil
		}
		if timeout == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-room:
		case <-p.done:
			p.unwritten.Add(-1)
			return ErrExited
		case <-timeout:
			p.unwritten.Add(-1)
			return fmt.Errorf("%w (%d writes waiting); see it with corral screen", ErrNotReading, waiting)
		}
	}
}
