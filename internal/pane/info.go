package pane

import (
	"slices"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/rules"
	"github.com/corral-dev/corral/internal/status"
	"github.com/corral-dev/corral/internal/term"
)

// Info is a copy of a pane's state.
type Info struct {
	ID, Name   string
	Agent      string
	Argv       []string
	Dir        string
	Cols, Rows int
	PID        int
	Started    time.Time
	Decision   combine.Decision
	Since      time.Time
	Exited     bool
	ExitCode   int
	ExitedAt   time.Time
	Foreground string // the foreground process's name
	Progress   int    // -1 when none; OSC 7501 root progress or OSC 9;4
	Records    []status.Record
	// HooksIgnored counts hook reports that decided nothing: unknown
	// events, bad payloads, another conversation's.
	HooksIgnored int
	// PromptShown is when the screen first showed the current prompt
	// (zero when it shows none); AnswerSettle is how long the agent's
	// prompts need on screen before they take keys.
	PromptShown  time.Time
	AnswerSettle time.Duration
}

// snapshot is what readers see of a pane: published whole by whoever
// holds mu, when it lets go of it (unlock), and never changed after. Its
// slices are its own: nothing the owner mutates is shared with it. Info is
// made from it and the pane's fields that never change, at each read: a
// snapshot a pane is kept for its life, and an Info beside the key would
// hold most of it twice (~0.5 KB a pane).
type snapshot struct {
	// key's manifest is the manifest in use (compiled manifests are
	// immutable); its held is the prompt held back for a policy (State ""
	// when none).
	key     snapshotKey
	records []status.Record
	// progress is Info's Progress: -1 when none.
	progress int
	// gen counts the snapshots published (Generation).
	gen uint64
}

// snapshotKey is everything a snapshot is built from that can change: the
// owner builds a new snapshot only when it differs, so a read chunk that
// changes nothing a reader sees costs one comparison.
type snapshotKey struct {
	decision        combine.Decision
	since           time.Time
	held            combine.Decision
	manifest        *rules.Manifest
	name            string
	cols, rows, pid int
	exited          bool
	exitCode        int
	exitedAt        time.Time
	foreground      string
	records         uint64
	progressState   int
	progress        int
	hooksIgnored    int
	promptShown     time.Time
	screenPrompt    string
}

func (p *Pane) snapshotKeyLocked() snapshotKey {
	d, since := p.engine.Decision()
	held, _ := p.engine.Held()
	c := p.engine.Counters()
	st, v := p.engine.Progress()
	return snapshotKey{decision: d, since: since, held: held, manifest: p.engine.Manifest(), name: p.name,
		cols: p.cfg.Cols, rows: p.cfg.Rows, pid: p.pid, exited: p.exited, exitCode: p.exitCode, exitedAt: p.exitedAt,
		foreground: p.fgName, records: p.engine.RecordsVersion(), progressState: st, progress: v,
		hooksIgnored: c.HooksIgnored + c.HooksOtherConversation, promptShown: p.engine.PromptShown(),
		screenPrompt: p.engine.ScreenPrompt()}
}

// unlock publishes the pane's state for readers, if it changed, and
// releases mu. Every holder of mu lets go of it here: a change made under
// mu is visible to readers as soon as mu is free.
func (p *Pane) unlock() {
	p.publishLocked()
	p.mu.Unlock()
}

// publishLocked stores a new snapshot when what readers see changed.
func (p *Pane) publishLocked() {
	k := p.snapshotKeyLocked()
	if s := p.snap.Load(); s != nil && s.key == k {
		return
	}
	s := &snapshot{key: k, progress: -1, gen: 1}
	if prev := p.snap.Load(); prev != nil {
		s.gen = prev.gen + 1
	}
	if prev := p.snap.Load(); prev != nil && prev.key.records == k.records {
		s.records = prev.records // immutable, and unchanged
	} else {
		s.records = p.engine.Records() // a fresh copy
	}
	for _, r := range s.records {
		if r.ID == "" && r.Progress >= 0 {
			s.progress = r.Progress
		}
	}
	if s.progress < 0 && k.progressState == term.ProgressSet {
		s.progress = k.progress
	}
	p.snap.Store(s)
}

// infoOf is the Info snapshot s says, sharing its slices.
func (p *Pane) infoOf(s *snapshot) Info {
	k := &s.key
	since := k.since
	if since.IsZero() {
		since = p.started
	}
	return Info{ID: p.cfg.ID, Name: k.name, Agent: k.manifest.Name, Argv: p.argv, Dir: p.cfg.Dir, Cols: k.cols,
		Rows: k.rows, PID: k.pid, Started: p.started, Decision: k.decision, Since: since, Exited: k.exited,
		ExitCode: k.exitCode, ExitedAt: k.exitedAt, Foreground: k.foreground, Progress: s.progress,
		Records: s.records, HooksIgnored: k.hooksIgnored, PromptShown: k.promptShown,
		AnswerSettle: k.manifest.AnswerSettle}
}

// Info returns a copy of the pane's state as of the last change that
// completed. It never waits: it loads what the pane published.
func (p *Pane) Info() Info {
	in := p.infoOf(p.snap.Load())
	// The caller's own slices: the snapshot is shared by every reader.
	in.Argv = slices.Clone(in.Argv)
	in.Records = slices.Clone(in.Records)
	// Counted outside mu, by a hook's caller that never waits.
	in.HooksIgnored += int(p.hooksDropped.Load())
	return in
}

// Generation changes whenever what Info says may have changed: a reader
// that kept the last one it saw knows, without a copy, whether to look
// again.
func (p *Pane) Generation() uint64 { return p.snap.Load().gen }

// Brief is Info without its command and records (nil): a listing that
// shows neither copies nothing but the struct.
func (p *Pane) Brief() Info {
	in := p.infoOf(p.snap.Load())
	in.Argv, in.Records = nil, nil
	in.HooksIgnored += int(p.hooksDropped.Load())
	return in
}

// Snapshot returns a copy of the visible screen. The terminal has its own
// lock, held only while one chunk of output is applied.
func (p *Pane) Snapshot() term.Snapshot { return p.term.Snapshot() }

// StyledRows returns the visible screen as styled runs.
func (p *Pane) StyledRows() [][]term.Run { return p.term.StyledRows() }

// AnswerNames lists the named answers the pane's manifest defines.
func (p *Pane) AnswerNames() []string {
	m := p.snap.Load().key.manifest
	var out []string
	for _, n := range []string{rules.AnswerYes, rules.AnswerAlways, rules.AnswerNo, rules.AnswerCancel} {
		if _, ok := m.Answers[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

// ANSI returns the visible screen with colours, as escape sequences.
func (p *Pane) ANSI() string { return p.term.ANSI() }

// foreground is the terminal's foreground process group, as read outside
// the pane's lock.
type foreground struct {
	pgrp int
	name string
	argv []string
}

// foregroundLocked records a new foreground process group: the agent is
// recognised from it (so `bash` then `claude` inside it is Claude Code),
// and a shell back in the foreground means the agent it ran has exited.
func (p *Pane) foregroundLocked(fg foreground) {
	pgrp, name, argv := fg.pgrp, fg.name, fg.argv
	if pgrp == p.fgPgrp && name == p.fgName {
		return
	}
	prev := p.fgPgrp
	p.fgPgrp = pgrp
	p.fgName = name
	now := time.Now()
	if p.cfg.Agent != "" {
		return
	}
	if m := p.cfg.Rules.IdentifyProcess(name, argv); m != nil {
		if m.Name != p.engine.Manifest().Name {
			p.queueLocked(p.engine.SetManifest(m, now))
		}
		p.queueLocked(p.engine.SetProcess(now, combine.Process{}))
		return
	}
	// The pane's own process is back in the foreground after another group
	// held it: whatever ran has exited.
	if pgrp == p.pid && prev != 0 && prev != p.pid {
		p.queueLocked(p.engine.SetManifest(p.cfg.Rules.Generic(), now))
		p.queueLocked(p.engine.SetProcess(now, combine.Process{AgentExited: true}))
	}
}

// PromptRegion is the text of the prompt the screen shows now: the region
// of the blocked rule that decided the pane's state. ok is false when no
// screen rule has the pane blocked (a report or a hook alone says so).
func (p *Pane) PromptRegion() (string, bool) {
	s := p.snap.Load()
	d, m := s.key.decision, s.key.manifest
	if d.State != combine.Blocked || d.Source != combine.SourceScreen || d.Rule == "" {
		return "", false
	}
	snap := p.term.Snapshot()
	return m.RegionText(d.Rule, rules.Screen{Lines: snap.Lines, Title: snap.Title})
}
