package verify

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/replay"
)

// Recording is one verify run: what was typed and drawn, the hooks'
// reports and corral's live states, with their times, and the steps.
// On disk (Save) it is a folder: session.cast (asciicast v2, the output
// and input, and a truth marker "state=S[:kind=K]" at each step's truth),
// hooks.ndjson (one hook payload a line, with its time) and run.json
// (the rest).
type Recording struct {
	Agent       string `json:"agent"`
	Rules       string `json:"rules"`
	Version     string `json:"version"`
	Pinned      string `json:"pinned"`
	Integration string `json:"integration"`
	// IntegrationOff says why the agent's hooks were not in force, when
	// corral knows (its integration_error).
	IntegrationOff string    `json:"integration_off,omitempty"`
	Command        []string  `json:"command"`
	Cols           int       `json:"cols"`
	Rows           int       `json:"rows"`
	Steps          []StepRun `json:"steps"`
	Skipped        []string  `json:"skipped,omitempty"`
	// Live is corral's state changes during the run (the daemon's events).
	Live []LivePoint `json:"live"`

	Cast  *replay.Recording `json:"-"`
	Hooks []Hook            `json:"-"`
}

// LivePoint is a Point as stored in run.json.
type LivePoint struct {
	At      float64 `json:"t"`
	State   string  `json:"state"`
	Kind    string  `json:"kind,omitempty"`
	Source  string  `json:"source"`
	Rule    string  `json:"rule,omitempty"`
	Message string  `json:"message,omitempty"`
}

// Hook is one hook report as the agent sent it.
type Hook struct {
	At      float64         `json:"t"`
	Agent   string          `json:"agent"`
	Payload json.RawMessage `json:"payload"`
}

// recording assembles the run.
func (c *capture) recording(p *Profile, command []string, runs []StepRun, hooks []Hook) *Recording {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := &Recording{Agent: p.Name, Rules: p.Rules, Pinned: p.Version, Command: command, Cols: c.cols(), Rows: c.rows(), Hooks: hooks}
	for i := range runs {
		r := &runs[i]
		r.Truth, r.TruthSource = r.Start, "phase"
		for _, rep := range c.reports {
			at := secs(rep.At)
			if at >= r.Start && at <= r.End && r.Want.Matches(rep.State, rep.Kind) {
				r.Truth, r.TruthSource = at, "osc7501"
				break
			}
		}
	}
	rec.Steps = runs
	for _, p := range c.live {
		rec.Live = append(rec.Live, LivePoint{At: secs(p.At), State: string(p.State), Kind: p.Kind, Source: p.Source, Rule: p.Rule, Message: p.Message})
	}
	cast := &replay.Recording{Cols: rec.Cols, Rows: rec.Rows}
	for _, o := range c.out {
		cast.Events = append(cast.Events, replay.Event{At: o.At, Code: "o", Data: o.Data})
	}
	for _, in := range c.in {
		cast.Events = append(cast.Events, replay.Event{At: in.At, Code: "i", Data: in.Data})
	}
	for _, r := range runs {
		m := "state=" + string(r.Want.State)
		if r.Want.Kind != "" {
			m += ":kind=" + r.Want.Kind
		}
		cast.Events = append(cast.Events, replay.Event{At: time.Duration(r.Truth * float64(time.Second)), Code: "m", Data: m})
	}
	sort.SliceStable(cast.Events, func(i, j int) bool { return cast.Events[i].At < cast.Events[j].At })
	rec.Cast = cast
	return rec
}

func (c *capture) cols() int { w, _ := c.term.Size(); return w }
func (c *capture) rows() int { _, h := c.term.Size(); return h }

// readHooks reads the hook log the pane's hooks appended to.
func readHooks(file string, t0 time.Time) []Hook {
	data, _ := os.ReadFile(file)
	var out []Hook
	for _, line := range bytes.Split(data, []byte("\n")) {
		var h struct {
			Time    time.Time       `json:"time"`
			Agent   string          `json:"agent"`
			Payload json.RawMessage `json:"payload"`
		}
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &h) != nil {
			continue
		}
		out = append(out, Hook{At: h.Time.Sub(t0).Seconds(), Agent: h.Agent, Payload: h.Payload})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// Save writes the recording into dir.
func (r *Recording) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("recording folder: %w", err)
	}
	var cast bytes.Buffer
	hdr, _ := json.Marshal(map[string]any{"version": 2, "width": r.Cols, "height": r.Rows,
		"title": strings.TrimSpace("corral verify " + r.Agent + " " + r.Version)})
	cast.Write(hdr)
	cast.WriteByte('\n')
	for _, e := range r.Cast.Events {
		line, _ := json.Marshal([]any{e.At.Seconds(), e.Code, e.Data})
		cast.Write(line)
		cast.WriteByte('\n')
	}
	var hooks bytes.Buffer
	for _, h := range r.Hooks {
		line, _ := json.Marshal(h)
		hooks.Write(line)
		hooks.WriteByte('\n')
	}
	meta, _ := json.MarshalIndent(r, "", "  ")
	for name, data := range map[string][]byte{"session.cast": cast.Bytes(), "hooks.ndjson": hooks.Bytes(), "run.json": append(meta, '\n')} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("save the recording: %w", err)
		}
	}
	return nil
}

// Load reads a recording saved by Save.
func Load(dir string) (*Recording, error) {
	meta, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	var r Recording
	if err := json.Unmarshal(meta, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "run.json"), err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "session.cast"))
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	if r.Cast, err = replay.Parse(data, r.Cols, r.Rows); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "session.cast"), err)
	}
	f, err := os.Open(filepath.Join(dir, "hooks.ndjson"))
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var h Hook
		if json.Unmarshal(sc.Bytes(), &h) == nil {
			r.Hooks = append(r.Hooks, h)
		}
	}
	return &r, sc.Err()
}
