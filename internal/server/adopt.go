package server

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/holder"
	"github.com/corral-dev/corral/internal/osproc"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/procs"
	"github.com/corral-dev/corral/internal/rules"
)

// heldEntry is what the table keeps of a pane that runs under a holder.
type heldEntry struct {
	mu  sync.Mutex // guards row's Sessions
	row tablePane
}

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
	e.held = &heldEntry{row: tablePane{ID: cfg.ID, Name: cfg.Name, Agent: cfg.Agent, Argv: argv, Launch: cfg.Argv, Cwd: cfg.Dir,
		Env: env, Added: added, Token: e.token, Remove: remove, Cols: in.Cols, Rows: in.Rows, Socket: cfg.Holder.Socket,
		Secret: cfg.Holder.Secret, Holder: hpid, PID: in.PID, Created: in.Started, Integration: launch}}
}

// snapshotTable is the table as the daemon knows it now: every pane whose
// program runs under a holder, with its live state.
func (s *Server) snapshotTable() tableFile {
	var f tableFile
	for _, e := range s.list() {
		if row, ok := s.rowOf(e); ok {
			f.Panes = append(f.Panes, row)
		}
	}
	s.table.mu.Lock()
	f.Lost = append(f.Lost, s.table.lost...)
	s.table.mu.Unlock()
	return f
}

// rowOf is a pane's row of the table, if it has one (a pane under a
// holder whose program runs).
func (s *Server) rowOf(e *entry) (tablePane, bool) {
	p, ok := e.asPane()
	if !ok || e.held == nil {
		return tablePane{}, false
	}
	in := p.Info()
	if in.Exited {
		return tablePane{}, false
	}
	e.held.mu.Lock()
	row := e.held.row
	row.Sessions = append([]sessionSeen(nil), row.Sessions...)
	e.held.mu.Unlock()
	row.Cols, row.Rows, row.Seen, row.Records = in.Cols, in.Rows, in.Agent, in.Records
	row.State, row.Kind, row.Message = string(in.Decision.State), in.Decision.Kind, in.Decision.Message
	row.Since, row.Source, row.Rule = in.Since, string(in.Decision.Source), in.Decision.Rule
	if h := p.Standing(); h != (detect.Standing{}) {
		row.Hooks = &h
	}
	return row, true
}

// saveTable writes every row that changed.
func (s *Server) saveTable() {
	if err := s.table.sync(s.snapshotTable(), nil); err != nil {
		s.opts.Logf("%v", err)
	}
}

// saveRows writes the rows of ids (a row whose pane is gone or exited is
// deleted): the cost of a change is its own, whatever the number of panes.
func (s *Server) saveRows(ids map[string]bool) {
	var f tableFile
	for id := range ids {
		s.mu.Lock()
		e := s.panes[id]
		s.mu.Unlock()
		if e == nil {
			continue
		}
		if row, ok := s.rowOf(e); ok {
			f.Panes = append(f.Panes, row)
		}
	}
	s.table.mu.Lock()
	for _, row := range s.table.lost {
		if ids[row.ID] {
			f.Lost = append(f.Lost, row)
		}
	}
	s.table.mu.Unlock()
	if err := s.table.sync(f, ids); err != nil {
		s.opts.Logf("%v", err)
	}
}

// tableLoop writes the rows a state change or a hook asked for soon after,
// and every tableEvery whatever else changed (OSC 7501 records, a size).
func (s *Server) tableLoop(stop <-chan struct{}) {
	defer close(s.table.loopDone)
	t := time.NewTicker(tableEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-s.table.dirty:
			select {
			case <-stop:
				return
			case <-time.After(tableDelay):
			}
			if ids := s.table.takeDirty(); ids != nil {
				s.saveRows(ids)
				continue
			}
		case <-t.C:
		}
		s.saveTable()
	}
}

// stopTable ends tableLoop and writes the table a last time, whole: a
// daemon that hands over writes nothing after the next one has started.
func (s *Server) stopTable() {
	s.table.stopOnce.Do(func() {
		close(s.table.stop)
		if s.table.started.Load() {
			<-s.table.loopDone
		}
	})
	if err := s.table.write(s.snapshotTable()); err != nil {
		s.opts.Logf("%v", err)
	}
}

// endUnit ends a unit at shutdown; at a hand-over, a pane under a holder
// is let go instead, for the next daemon.
func (s *Server) endUnit(u unit) {
	if s.handingOver.Load() {
		if p, ok := u.(*pane.Pane); ok && p.Detach() {
			return
		}
	}
	u.Close(s.opts.KillGrace)
}

// adoptWait bounds the connection to one holder at start.
const adoptWait = 2 * time.Second

// adoptAtOnce bounds the panes being adopted at the same time.
const adoptAtOnce = 64

// adoptAll re-adopts the panes of the table whose holders still run; the
// others are kept as lost, for corral restore.
func (s *Server) adoptAll() {
	start := time.Now()
	f := s.table.load()
	// A lost pane whose holder still runs (it refused, or was slow, the
	// last time) is tried again.
	var lost []tablePane
	for _, row := range f.Lost {
		if alive(row.Holder) {
			f.Panes = append(f.Panes, row)
		} else {
			lost = append(lost, row)
		}
	}
	s.table.mu.Lock()
	s.table.lost = lost
	s.table.mu.Unlock()
	s.endStrays(f)
	if len(f.Panes) == 0 {
		s.saveTable() // the whole table, the journal folded in
		return
	}
	// One connection per holder: a second would take it from the first.
	seen := map[string]bool{}
	rows := f.Panes[:0]
	for _, row := range f.Panes {
		if seen[row.ID] || seen["sock:"+row.Socket] {
			s.opts.Logf("pane table: a second entry for pane %s (%s) skipped", row.ID, row.Socket)
			continue
		}
		seen[row.ID], seen["sock:"+row.Socket] = true, true
		rows = append(rows, row)
	}
	f.Panes = rows
	last := s.lastLogged()
	type result struct {
		row tablePane
		e   *entry
		err error
	}
	results := make([]result, len(f.Panes))
	var wg sync.WaitGroup
	// A few at a time: each connection has adoptWait to be answered, and
	// a thousand at once on holder processes of one thread each would
	// leave the last ones unanswered, their panes taken for lost.
	slots := make(chan struct{}, adoptAtOnce)
	for i, row := range f.Panes {
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
			r.row.Why = r.err.Error()
			s.opts.Logf("pane %s (%s) not adopted: %v", r.row.ID, r.row.Name, r.err)
			s.table.mu.Lock()
			s.table.lost = append(s.table.lost, r.row)
			s.table.mu.Unlock()
			continue
		}
		s.mu.Lock()
		if _, taken := s.panes[r.row.ID]; taken || s.takenLocked(r.row.Name) != nil {
			s.mu.Unlock()
			// Let go, never end: the program is the user's work.
			if p, ok := r.e.asPane(); ok {
				p.Detach()
			}
			r.row.Why = "its id or name is taken by another pane"
			s.opts.Logf("pane %s (%s) not adopted: %s", r.row.ID, r.row.Name, r.row.Why)
			s.table.mu.Lock()
			s.table.lost = append(s.table.lost, r.row)
			s.table.mu.Unlock()
			continue
		}
		s.panes[r.row.ID] = r.e
		s.order = append(s.order, r.row.ID)
		s.mu.Unlock()
		adopted++
		if p, ok := r.e.asPane(); ok && r.row.Remove && p.Info().Exited {
			// A --rm pane whose program ended while no daemon ran: its
			// OnExit came before it was registered here.
			s.opts.Logf("pane %s (%s): its program exited while no daemon ran; removed (--rm)", r.row.ID, r.row.Name)
			go func() { _ = s.remove(r.row.ID, false) }()
		}
		if p, ok := r.e.asPane(); ok && r.e.launch != nil && r.e.launch.Watch {
			go r.e.watchIntegration(p)
		}
	}
	s.opts.Logf("re-adopted %d of %d panes in %v", adopted, len(f.Panes), time.Since(start).Round(time.Millisecond))
	s.saveTable()
}

// logged is a pane's newest logged decision and when it was made.
type logged struct {
	d  combine.Decision
	at time.Time
}

// strayWait bounds the look at one holder socket the table does not name.
const strayWait = time.Second

// endStrays deals with the holder sockets the table does not name. A
// daemon that ended between starting a pane's holder and writing the table
// leaves a holder whose secret nobody knows: no daemon can adopt it, and
// its pane was never reported (the run failed), so its program would run
// unseen. Such a pane, when its holder is a corral hold process of this
// user (the kernel says who listens), is ended as a failed start is: its
// program and everything the program started (holder.EndStray; SIGTERM to
// a holder of an older build, which holds one pane). A socket nobody
// listens on is removed; anything else is left alone and logged. When the
// table could not be read, nothing is ended: the holders are then the
// panes it named.
func (s *Server) endStrays(f tableFile) {
	dir := filepath.Join(s.opts.StateDir, "holders")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	known := map[string]bool{}
	for _, row := range slices.Concat(f.Panes, f.Lost) {
		known[filepath.Clean(row.Socket)] = true
	}
	for _, de := range ents {
		path := filepath.Join(dir, de.Name())
		if !strings.HasSuffix(de.Name(), ".sock") || known[path] {
			continue
		}
		pid, err := holder.Listener(path, strayWait)
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			_ = os.Remove(path) // its holder is gone
		case err != nil:
			s.opts.Logf("holder socket %s is not in the pane table and cannot be checked (%v); left alone", path, err)
		case s.table.unread:
			s.opts.Logf("holder %d (%s) left running: the pane table could not be read, so its pane is not known; "+
				"end its program (its processes carry CORRAL_PANE=%s), and the holder lets it go", pid, path, strings.TrimSuffix(de.Name(), ".sock"))
		case !alive(pid):
			s.opts.Logf("the process listening on %s (pid %d) is not a corral holder; left alone", path, pid)
		default:
			// Only that pane: its holder process may serve others.
			err := holder.EndStray(path, false, strayWait)
			if errors.Is(err, holder.ErrOldHolder) {
				err = syscall.Kill(pid, syscall.SIGTERM) // one pane per process then
			}
			s.opts.Logf("holder %d (%s): its pane was started by a daemon that ended before noting it, and no daemon "+
				"can adopt it (its secret was never saved); ended it and its program (%v)", pid, path, errOr(err, "done"))
		}
	}
}

func errOr(err error, ok string) any {
	if err != nil {
		return err
	}
	return ok
}

// lastLogged returns the newest logged decision of every pane.
func (s *Server) lastLogged() map[string]logged {
	evs, _, err := s.log.Since(time.Time{})
	if err != nil {
		s.opts.Logf("%v", err)
	}
	out := map[string]logged{}
	for _, ev := range evs {
		out[ev.Pane] = logged{combine.Decision{State: combine.State(ev.State), Kind: ev.Kind, Message: ev.Message}, ev.Time}
	}
	return out
}

// lastKnown is the state the pane was last known in, and since when: the
// table's row when it agrees with the log (it says more: the rule, the
// source, a message kept), else the log's, which is written first.
func lastKnown(row tablePane, ev logged) (combine.Decision, time.Time) {
	d := combine.Decision{State: combine.State(row.State), Kind: row.Kind, Message: row.Message,
		Source: combine.Source(row.Source), Rule: row.Rule}
	if ev.d.State == "" || ev.d.State == d.State && ev.d.Kind == d.Kind && (d.State != combine.Blocked || ev.d.Message == d.Message) {
		return d, row.Since
	}
	return ev.d, ev.at
}

// adopt reconnects to one pane's holder and makes it a pane again.
func (s *Server) adopt(row tablePane, ev logged) (*entry, error) {
	row.Why = ""
	if row.ID == "" || row.Socket == "" || len(row.Secret) < 32 || len(row.Launch) == 0 {
		return nil, errors.New("the table's entry lacks an id, a socket, a secret or a command")
	}
	if filepath.Dir(row.Socket) != filepath.Join(s.opts.StateDir, "holders") {
		return nil, fmt.Errorf("its holder socket %s is not in this daemon's state folder", row.Socket)
	}
	if _, err := holder.SocketDir(s.opts.StateDir); err != nil {
		return nil, err
	}
	hc, err := holder.Dial(row.Socket, row.Secret, adoptWait)
	if err != nil {
		absent := errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
		// A holder process may live on for other panes: the pane is gone
		// when nothing listens on its socket and its program has ended.
		// A program whose holder is gone has lost its terminal: what it
		// left running is ended (endLeft) and the pane can start again.
		if absent && (!programRuns(row) || !alive(row.Holder)) {
			_ = os.Remove(row.Socket) // a socket file left by a holder that is gone
			return nil, fmt.Errorf("its holder (pid %d) no longer holds it (the machine restarted, or the holder was killed): corral restore starts it again", row.Holder)
		}
		return nil, fmt.Errorf("its socket is not this pane's holder, or refused us: %w", err)
	}
	last, since := lastKnown(row, ev)
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
		s.table.touch(id)
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
	e := &entry{p: p, name: name, token: row.Token, launch: row.Integration, held: &heldEntry{row: row}}
	e.approve.Store(s.policyOf(row))
	e.worktree.Store(worktreeOf(row))
	if e.launch == nil {
		e.launch = &agents.Launch{Argv: row.Launch, Missing: map[string]string{}}
	}
	holdForPolicy(p, e.approve.Load())
	return e, nil
}

// programRuns reports whether the pane's program (its first process) may
// still run: a live process of its pid that carries the pane's mark, or is
// a child of the pane's holder (a program may have cleared its
// environment). It errs on the side of running: starting a program again
// while it runs would run it twice.
func programRuns(row tablePane) bool {
	if row.PID <= 0 {
		return false
	}
	if row.ID != "" && procs.Marked(row.PID, "CORRAL_PANE="+row.ID) {
		return true
	}
	ppid, zombie, ok := procs.Parent(row.PID)
	return ok && !zombie && row.Holder > 0 && ppid == row.Holder
}

// alive says whether pid is a running holder (after a reboot the pid may
// be anyone's).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	args, err := osproc.Cmdline(pid)
	return err == nil && len(args) > 1 && args[1] == "hold"
}

// handleHandover lets go of every pane under a holder (without ending its
// program), writes the table and stops: the next daemon adopts them.
// Headless jobs run inside the daemon and end with it.
// With to (a socket of the new daemon's in the state folder), the lock and
// the listening socket are passed on to it rather than let go of.
func (s *Server) handleHandover(w http.ResponseWriter, r *http.Request) {
	var req struct {
		To string `json:"to"`
	}
	if !decode(w, r, &req) {
		return
	}
	if req.To != "" && filepath.Dir(req.To) != filepath.Clean(s.opts.StateDir) {
		fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("the hand-over socket %s is not in the state folder %s", req.To, s.opts.StateDir))
		return
	}
	if !s.handingOver.CompareAndSwap(false, true) {
		fail(w, http.StatusConflict, "handing_over", errors.New("the daemon is already handing its panes over"))
		return
	}
	passes := false
	if req.To != "" {
		if err := s.prepareHandover(req.To); err != nil {
			s.opts.Logf("hand-over: %v; the socket is let go of instead", err)
		} else {
			passes = true
		}
	}
	reply(w, map[string]any{"status": "handing over", "passes": passes})
	go s.Shutdown()
}

// noteSession records an agent conversation a hook report named, for a
// restore to resume.
func (s *Server) noteSession(e *entry, agent, session string) {
	if e.held == nil || session == "" {
		return
	}
	defer s.table.touch(e.p.ID())
	e.held.mu.Lock()
	defer e.held.mu.Unlock()
	ss := e.held.row.Sessions
	if n := len(ss); n > 0 && ss[n-1].ID == session && ss[n-1].Agent == agent {
		return
	}
	ss = append(ss, sessionSeen{Agent: agent, ID: session, At: time.Now()})
	if len(ss) > 8 {
		ss = ss[len(ss)-8:]
	}
	e.held.row.Sessions = ss
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
	_, reserved := s.reserved[id]
	if _, taken := s.panes[id]; taken || reserved || s.byNameLocked(id) != nil {
		return got, set, nil
	}
	delete(s.reserved, got)
	s.reserved[id] = name
	return id, set, nil
}

// findStarting is find, waiting (at most SpawnWait) for a pane that is
// being started: its program runs, and its hooks report, before its
// holder has answered the daemon.
func (s *Server) findStarting(ref string) (*entry, error) {
	deadline := time.Now().Add(SpawnWait)
	for {
		e, err := s.find(ref)
		if err == nil {
			return e, nil
		}
		s.mu.Lock()
		_, starting := s.reserved[ref]
		s.mu.Unlock()
		if !starting || time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(2 * time.Millisecond)
	}
}
