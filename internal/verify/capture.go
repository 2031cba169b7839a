package verify

import (
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/status"
	"github.com/corral-dev/corral/internal/term"
)

// capture is what a live run saw, with times: the pane's output (and a
// local terminal fed the same bytes, for screen checks and the agent's
// own reports), the keys typed, and corral's state changes.
type capture struct {
	t0 time.Time

	mu      sync.Mutex // guards the fields that follow
	term    *term.Terminal
	out     []timed
	in      []timed
	reports []Point // the agent's OSC 7501 root reports
	live    []Point // corral's state changes for the pane
	pending []term.Event
	closed  bool
	// ready is the profile's ready text; readyAt is when the screen first
	// showed it (negative: not yet).
	ready   string
	readyAt time.Duration
}

type timed struct {
	At   time.Duration
	Data string
}

// Point is a state at a moment of a run.
type Point struct {
	At      time.Duration
	State   combine.State
	Kind    string
	Source  string
	Rule    string
	Message string
}

func newCapture(cols, rows int) *capture {
	c := &capture{t0: time.Now(), readyAt: -1}
	c.term = term.New(term.Options{Cols: cols, Rows: rows, OnEvent: func(ev term.Event) { c.pending = append(c.pending, ev) }})
	return c
}

func (c *capture) since(t time.Time) time.Duration { return t.Sub(c.t0) }

// output records bytes from the pane.
func (c *capture) output(b []byte) {
	now := c.since(time.Now())
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.out = append(c.out, timed{now, string(b)})
	_, _ = c.term.Write(b)
	for _, ev := range c.pending {
		if ev.Kind != term.EventStatus {
			continue
		}
		r, err := status.Parse(ev.Text)
		if err != nil || r.ID != "" {
			continue
		}
		c.reports = append(c.reports, Point{At: now, State: combine.State(r.State), Kind: string(r.Kind), Source: "osc7501", Message: r.Msg})
	}
	c.pending = c.pending[:0]
	if c.ready != "" && c.readyAt < 0 && strings.Contains(c.term.Snapshot().Text(), c.ready) {
		c.readyAt = now
	}
}

// readySince is when the screen first showed the agent's ready text.
func (c *capture) readySince() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readyAt, c.readyAt >= 0
}

// liveBefore returns corral's state changes before a moment.
func (c *capture) liveBefore(at time.Duration) []Point {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Point
	for _, p := range c.live {
		if p.At < at {
			out = append(out, p)
		}
	}
	return out
}

// liveSince returns corral's state changes from a moment on.
func (c *capture) liveSince(at time.Duration) []Point {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Point
	for _, p := range c.live {
		if p.At >= at {
			out = append(out, p)
		}
	}
	return out
}

func (c *capture) input(at time.Time, s string) {
	c.mu.Lock()
	c.in = append(c.in, timed{c.since(at), s})
	c.mu.Unlock()
}

func (c *capture) change(p Point) {
	c.mu.Lock()
	c.live = append(c.live, p)
	c.mu.Unlock()
}

// screenHas says whether the local screen shows text.
func (c *capture) screenHas(text string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Contains(c.term.Snapshot().Text(), text)
}

func (c *capture) screen() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.term.Snapshot().Text()
}

// lastReport is the agent's newest report since from.
func (c *capture) lastReport(from time.Duration) (Point, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.reports); n > 0 && c.reports[n-1].At >= from {
		return c.reports[n-1], true
	}
	return Point{}, false
}

// reported says whether the agent has given any report.
func (c *capture) reported() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.reports) > 0
}

// liveState is corral's newest state.
func (c *capture) liveState() Point {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.live); n > 0 {
		return c.live[n-1]
	}
	return Point{State: combine.Idle, Source: "default"}
}

func (c *capture) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.term.Close()
}
