package pane

import (
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

// Info returns a copy of the pane's state. A pane that does not answer
// within LockWait gives its last copy.
func (p *Pane) Info() Info {
	if !p.mu.lockWithin(LockWait) {
		if in := p.last.Load(); in != nil {
			return *in
		}
		p.mu.Lock() // only before the first copy, in Start
	}
	in := p.infoLocked()
	p.mu.Unlock()
	c := in
	p.last.Store(&c)
	return in
}

func (p *Pane) infoLocked() Info {
	d, since := p.engine.Decision()
	if since.IsZero() {
		since = p.started
	}
	in := Info{ID: p.cfg.ID, Name: p.name, Agent: p.engine.Manifest().Name, Argv: append([]string(nil), p.cfg.Argv...),
		Dir: p.cfg.Dir, Cols: p.cfg.Cols, Rows: p.cfg.Rows, PID: p.pid, Started: p.started, Decision: d, Since: since,
		Exited: p.exited, ExitCode: p.exitCode, ExitedAt: p.exitedAt, Foreground: p.fgName, Progress: -1,
		Records: p.engine.Records()}
	c := p.engine.Counters()
	in.HooksIgnored = c.HooksIgnored + c.HooksOtherConversation + int(p.hooksDropped.Load())
	in.PromptShown, in.AnswerSettle = p.engine.PromptShown(), p.engine.Manifest().AnswerSettle
	for _, r := range in.Records {
		if r.ID == "" && r.Progress >= 0 {
			in.Progress = r.Progress
		}
	}
	if st, v := p.engine.Progress(); in.Progress < 0 && st == term.ProgressSet {
		in.Progress = v
	}
	return in
}

// Snapshot returns a copy of the visible screen. The terminal has its own
// lock, held only while one chunk of output is applied.
func (p *Pane) Snapshot() term.Snapshot { return p.term.Snapshot() }

// StyledRows returns the visible screen as styled runs.
func (p *Pane) StyledRows() [][]term.Run { return p.term.StyledRows() }

// AnswerNames lists the named answers the pane's manifest defines (none
// when the pane does not answer within LockWait).
func (p *Pane) AnswerNames() []string {
	if !p.mu.lockWithin(LockWait) {
		return nil
	}
	m := p.engine.Manifest()
	p.mu.Unlock()
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
	if pgrp == p.fgPgrp {
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
	if !p.mu.lockWithin(LockWait) {
		return "", false
	}
	d, _ := p.engine.Decision()
	m := p.engine.Manifest()
	p.mu.Unlock()
	if d.State != combine.Blocked || d.Source != combine.SourceScreen || d.Rule == "" {
		return "", false
	}
	snap := p.term.Snapshot()
	return m.RegionText(d.Rule, rules.Screen{Lines: snap.Lines, Title: snap.Title})
}
