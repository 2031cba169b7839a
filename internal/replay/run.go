package replay

import (
	"time"

	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/rules"
)

// Epoch is the instant a recording starts on the engine's clock.
var Epoch = time.Unix(0, 0).UTC()

// Options configure a replay.
type Options struct {
	Rules      *rules.Set
	Agent      string
	ScreenOnly bool
	// Until stops the replay at this offset (0: the whole recording).
	Until time.Duration
	// Samples are offsets, in increasing order, at which OnSample is called
	// with the engine as it stands then (every deadline up to the offset
	// has fired; no later event has been applied).
	Samples  []time.Duration
	OnSample func(at time.Duration, e *detect.Engine)
}

// Result is a finished replay. Close it to release the engine.
type Result struct {
	Changes []detect.Change
	Engine  *detect.Engine
}

// Offset converts an engine time back to seconds from the start.
func Offset(t time.Time) time.Duration { return t.Sub(Epoch) }

// Run replays a recording through a fresh engine, instantly, using the
// recording's timestamps as the clock: deadlines that fall between two
// events fire at their own time, as they would live.
func Run(rec *Recording, opts Options) *Result {
	e := detect.New(detect.Config{Cols: rec.Cols, Rows: rec.Rows, Rules: opts.Rules, Agent: opts.Agent, ScreenOnly: opts.ScreenOnly})
	res := &Result{Engine: e}
	advance := func(to time.Time) {
		for {
			at, ok := e.Deadline()
			if !ok || at.After(to) {
				return
			}
			res.Changes = append(res.Changes, e.Tick(at)...)
		}
	}
	samples := opts.Samples
	sampleUntil := func(to time.Duration) {
		for len(samples) > 0 && samples[0] < to {
			advance(Epoch.Add(samples[0]))
			opts.OnSample(samples[0], e)
			samples = samples[1:]
		}
	}
	for _, ev := range rec.Events {
		if opts.Until > 0 && ev.At > opts.Until {
			break
		}
		sampleUntil(ev.At)
		now := Epoch.Add(ev.At)
		advance(now)
		switch ev.Code {
		case "o":
			res.Changes = append(res.Changes, e.Feed(now, []byte(ev.Data))...)
		case "r":
			if cols, rows, ok := ParseResize(ev.Data); ok {
				e.Resize(now, cols, rows)
			}
		}
	}
	sampleUntil(1 << 62)
	// Let the last quiet window and confirmations run out.
	for {
		at, ok := e.Deadline()
		if !ok {
			break
		}
		res.Changes = append(res.Changes, e.Tick(at)...)
	}
	return res
}

// Close releases the engine.
func (r *Result) Close() { r.Engine.Close() }
