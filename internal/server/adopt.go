package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/corral-dev/corral/internal/holder"
	"github.com/corral-dev/corral/internal/httpapi"
	"github.com/corral-dev/corral/internal/osproc"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/panestore"
	"github.com/corral-dev/corral/internal/rules"
)

// holderExe is the binary a holder runs: this daemon's own, even when the
// file was replaced since (an upgrade).
var holderExe = osproc.SelfExe()

// maxSocketPath is what a unix socket's path may hold.
const maxSocketPath = 107

// holding prepares a holder for pane id, or says why it cannot have one
// (the pane then runs on a PTY of the daemon's own).
func (s *Server) holding(id string) (*pane.Holding, error) {
	dir, err := holder.SocketDir(s.opts.StateDir)
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, id+".sock")
	if len(sock) > maxSocketPath {
		return nil, fmt.Errorf("the holder socket path %s is longer than %d bytes; set CORRAL_STATE_DIR to a shorter folder", sock, maxSocketPath)
	}
	s.holderLogOnce.Do(func() {
		f, err := os.OpenFile(filepath.Join(dir, "holders.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err == nil {
			s.holderLog = f
		}
		s.holders = &holder.Pool{Exe: holderExe, Stderr: s.holderLog}
	})
	return &pane.Holding{Pool: s.holders, Socket: sock, Secret: holder.NewSecret()}, nil
}

// prepareHold gives cfg a holder, unless the daemon cannot make one.
func (s *Server) prepareHold(cfg *pane.Config) {
	if os.Getenv("CORRAL_NO_HOLDER") == "1" {
		return
	}
	h, err := s.holding(cfg.ID)
	if err != nil {
		s.opts.Logf("pane %s runs without a holder (it will end with the daemon): %v", cfg.ID, err)
		return
	}
	cfg.Holder = h
}

// noteHeld makes the table's row of a started pane, before it is
// registered (readers of the entry take held without a lock).
func (s *Server) noteHeld(e *entry, p *pane.Pane, cfg pane.Config, argv, env, added []string, remove bool) {
	held, hpid := p.Held()
	if !held {
		return
	}
	in := p.Info()
	launch := e.launch
	e.held = panestore.NewHeld(panestore.Row{ID: cfg.ID, Name: cfg.Name, Agent: cfg.Agent, Argv: argv, Launch: cfg.Argv, Cwd: cfg.Dir,
		Env: env, Added: added, Token: e.token, Remove: remove, Cols: in.Cols, Rows: in.Rows, Socket: cfg.Holder.Socket,
		Secret: cfg.Holder.Secret, Holder: hpid, PID: in.PID, Created: in.Started, Integration: launch})
}

// rowOf is a pane's row of the table, if it has one (a pane under a
// holder whose program runs).
func (s *Server) rowOf(e *entry) (panestore.Row, bool) {
	if e.held == nil {
		return panestore.Row{}, false
	}
	return e.held.Live(e.p)
}

// tableRows gives the pane table the rows of the panes ids names (nil:
// every pane) that have one. It takes s.mu, never with a pane's lock.
func (s *Server) tableRows(ids map[string]bool) []panestore.Row {
	var es []*entry
	if ids == nil {
		es = s.listPanes()
	} else {
		s.mu.Lock()
		for id := range ids {
			if e := s.panes[id]; e != nil {
				es = append(es, e)
			}
		}
		s.mu.Unlock()
	}
	var rows []panestore.Row
	for _, e := range es {
		if row, ok := s.rowOf(e); ok {
			rows = append(rows, row)
		}
	}
	return rows
}

// changedRows names the held panes whose state may have changed since
// the table's loop last asked: a load and a comparison a pane, no row
// built or encoded.
func (s *Server) changedRows() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids map[string]bool
	for id, e := range s.panes {
		if e.held == nil {
			continue
		}
		if gen := e.p.Generation(); e.tableGen.Swap(gen) != gen {
			if ids == nil {
				ids = map[string]bool{}
			}
			ids[id] = true
		}
	}
	return ids
}

// saved is the policy as the table keeps it.
func (a *approver) saved() *panestore.Policy {
	if a == nil {
		return nil
	}
	return &panestore.Policy{Source: a.policy.Source, Text: string(a.text)}
}

// saved is the worktree as the table keeps it.
func (wt *worktree) saved() *panestore.Worktree {
	if wt == nil {
		return nil
	}
	return &panestore.Worktree{Path: wt.path, Repo: wt.repo, Branch: wt.branch, Base: wt.base, NewBranch: wt.newBranch}
}

// policyOf is the policy a table's pane had (nil: none, or it no
// longer reads, which is logged: its requests are then left to the person).
func (s *Server) policyOf(row panestore.Row) *approver {
	if row.Policy == nil {
		return nil
	}
	p, err := headless.ParsePolicy(row.Policy.Source, []byte(row.Policy.Text))
	if err != nil {
		s.opts.Logf("pane %s: its policy no longer reads (%v); its permission requests are left to you", row.ID, err)
		return nil
	}
	return &approver{policy: p, text: []byte(row.Policy.Text)}
}

// worktreeOf is the worktree a table's pane had.
func worktreeOf(row panestore.Row) *worktree {
	w := row.Worktree
	if w == nil || w.Path == "" || w.Repo == "" {
		return nil
	}
	wt := &worktree{path: w.Path, repo: w.Repo, branch: w.Branch, base: w.Base, newBranch: w.NewBranch}
	wt.refresh()
	return wt
}

// endPane ends a pane at shutdown; at a hand-over, a pane under a holder
// is let go instead, for the next daemon.
func (s *Server) endPane(p *pane.Pane) {
	if s.handingOver.Load() && p.Detach() {
		return
	}
	p.Close(s.opts.KillGrace)
}

// endJob ends a job at shutdown; at a hand-over, a held job is let go
// instead, for the next daemon.
func (s *Server) endJob(j *job) {
	if s.handingOver.Load() && j.letGo() {
		return
	}
	j.Close(s.opts.KillGrace)
}

// adoptAtOnce bounds the panes being adopted at the same time.
const adoptAtOnce = 64

// adoptAll re-adopts the panes of the table whose holders still run; the
// others are kept as lost, for corral restore.
func (s *Server) adoptAll() {
	start := time.Now()
	rows := s.table.Open()
	if len(rows) == 0 {
		s.table.Save() // the whole table, the journal folded in
		return
	}
	last := s.lastLogged()
	type result struct {
		row panestore.Row
		e   *entry
		err error
	}
	results := make([]result, len(rows))
	var wg sync.WaitGroup
	// A few at a time: each connection has adoptWait to be answered, and
	// a thousand at once on holder processes of one thread each would
	// leave the last ones unanswered, their panes taken for lost.
	slots := make(chan struct{}, adoptAtOnce)
	for i, row := range rows {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			e, err := s.adopt(row, last[row.ID])
			results[i] = result{row, e, err}
		}()
	}
	wg.Wait()
	sort.SliceStable(results, func(i, j int) bool { return results[i].row.Created.Before(results[j].row.Created) })
	adopted := 0
	for _, r := range results {
		if r.err != nil {
			s.opts.Logf("pane %s (%s) not adopted: %v", r.row.ID, r.row.Name, r.err)
			s.table.AddLost(r.row, r.err.Error())
			continue
		}
		s.mu.Lock()
		if s.roster.Has(r.row.ID) || s.roster.Taken(r.row.Name) != nil {
			s.mu.Unlock()
			// Let go, never end: the program is the user's work.
			r.e.p.Detach()
			why := "its id or name is taken by another pane"
			s.opts.Logf("pane %s (%s) not adopted: %s", r.row.ID, r.row.Name, why)
			s.table.AddLost(r.row, why)
			continue
		}
		s.panes[r.row.ID] = r.e
		s.roster.Add(r.row.ID, r.e.name)
		s.mu.Unlock()
		adopted++
		if r.row.Remove && r.e.p.Info().Exited {
			// A --rm pane whose program ended while no daemon ran: its
			// OnExit came before it was registered here.
			s.opts.Logf("pane %s (%s): its program exited while no daemon ran; removed (--rm)", r.row.ID, r.row.Name)
			go func() { _ = s.remove(r.row.ID, false) }()
		}
		if r.e.launch != nil && r.e.launch.Watch {
			go r.e.watchIntegration(r.e.p)
		}
	}
	s.opts.Logf("re-adopted %d of %d panes in %v", adopted, len(rows), time.Since(start).Round(time.Millisecond))
	s.table.Save()
}

// lastLogged returns the newest logged decision of every pane.
func (s *Server) lastLogged() map[string]panestore.Logged {
	evs, _, err := s.log.Since(time.Time{})
	if err != nil {
		s.opts.Logf("%v", err)
	}
	out := map[string]panestore.Logged{}
	for _, ev := range evs {
		out[ev.Pane] = panestore.Logged{D: combine.Decision{State: combine.State(ev.State), Kind: ev.Kind, Message: ev.Message}, At: ev.Time}
	}
	return out
}

// adopt reconnects to one pane's holder and makes it a pane again.
func (s *Server) adopt(row panestore.Row, ev panestore.Logged) (*entry, error) {
	row.Why = ""
	hc, err := s.table.Dial(row)
	if err != nil {
		return nil, err
	}
	last, since := panestore.LastKnown(row, ev)
	var hooks detect.Standing
	if row.Hooks != nil {
		hooks = *row.Hooks
	}
	name := row.Name
	id := row.ID
	files := []string(nil)
	if row.Integration != nil {
		files = row.Integration.Files
	}
	s.mu.Lock()
	set := s.rules
	s.mu.Unlock()
	cfg := pane.Config{ID: id, Name: name, Argv: row.Launch, Dir: row.Cwd, Env: row.Added, Cols: row.Cols, Rows: row.Rows,
		Rules: set, Agent: row.Agent, Seen: row.Seen}
	cfg.OnChange = func(p *pane.Pane, c detect.Change) { s.record(p.ID(), name, p.Info().Agent, c) }
	remove := row.Remove
	cfg.OnExit = func(p *pane.Pane) {
		for _, f := range files {
			_ = os.Remove(f)
		}
		if msg := p.Lost(); msg != "" {
			s.opts.Logf("pane %s: %s", p.ID(), msg)
		}
		s.table.Touch(id)
		if remove {
			go func() { _ = s.remove(id, false) }()
		}
	}
	p, err := pane.Adopt(cfg, hc, pane.Adopted{Started: row.Created, Records: row.Records, Last: last,
		Since: since, Hooks: hooks})
	if err != nil {
		hc.Close()
		return nil, err
	}
	if _, hpid := p.Held(); hpid != row.Holder && row.Holder != 0 {
		s.opts.Logf("pane %s: its holder is pid %d (the table said %d)", id, hpid, row.Holder)
	}
	row.Holder, row.PID = hc.Welcome.HolderPID, hc.Welcome.ProgramPID
	e := &entry{p: p, name: name, token: row.Token, launch: row.Integration, held: panestore.NewHeld(row)}
	e.approve.Store(s.policyOf(row))
	e.worktree.Store(worktreeOf(row))
	if e.launch == nil {
		e.launch = &agents.Launch{Argv: row.Launch, Missing: map[string]string{}}
	}
	holdForPolicy(p, e.approve.Load())
	return e, nil
}

// Handover readies the daemon to let go of every pane under a holder
// (without ending its program), write the table and stop (Shutdown, once
// this is answered): the next daemon adopts them.
// Headless jobs run inside the daemon and end with it.
// With to (a socket of the new daemon's in the state folder), the lock and
// the listening socket are passed on to it rather than let go of.
func (s *Server) Handover(req api.HandoverRequest) (api.HandoverResult, error) {
	if req.To != "" && filepath.Dir(req.To) != filepath.Clean(s.opts.StateDir) {
		return api.HandoverResult{}, httpapi.BadRequest(fmt.Errorf("the hand-over socket %s is not in the state folder %s", req.To, s.opts.StateDir))
	}
	if !s.handingOver.CompareAndSwap(false, true) {
		return api.HandoverResult{}, httpapi.Conflict("handing_over", errors.New("the daemon is already handing its panes over"))
	}
	passes := false
	if req.To != "" {
		if err := s.prepareHandover(req.To); err != nil {
			s.opts.Logf("hand-over: %v; the socket is let go of instead", err)
		} else {
			passes = true
		}
	}
	return api.HandoverResult{Status: "handing over", Passes: passes}, nil
}

// noteSession records an agent conversation a hook report named, for a
// restore to resume.
func (s *Server) noteSession(e *entry, agent, session string) {
	if e.held == nil || session == "" {
		return
	}
	defer s.table.Touch(e.p.ID())
	e.held.NoteSession(agent, session, time.Now())
}

// reserveAs is reserve, keeping id when it is free (a restored pane keeps
// its id).
func (s *Server) reserveAs(id, name string) (string, *rules.Set, error) {
	got, set, err := s.reserve(name)
	if err != nil || id == "" || id == got {
		return got, set, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.roster.Rereserve(got, id), set, nil
}

// findStarting is findPane, waiting (at most SpawnWait) for a pane that is
// being started: its program runs, and its hooks report, before its
// holder has answered the daemon.
func (s *Server) findStarting(ref string) (*entry, error) {
	deadline := time.Now().Add(SpawnWait)
	for {
		e, err := s.findPane(ref)
		if err == nil {
			return e, nil
		}
		s.mu.Lock()
		starting := s.roster.Reserved(ref)
		s.mu.Unlock()
		if !starting || time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(2 * time.Millisecond)
	}
}
