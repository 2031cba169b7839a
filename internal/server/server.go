// Package server is the daemon: it hosts panes, keeps the event log, and
// serves the HTTP/JSON API and the event stream on a unix socket that only
// its user can open.
package server

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/board"
	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/detect"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/corral-dev/corral/internal/holder"
	"github.com/corral-dev/corral/internal/notify"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/panestore"
	"github.com/corral-dev/corral/internal/procs"
	"github.com/corral-dev/corral/internal/rules"
	"github.com/corral-dev/corral/internal/ruleswatch"
	"github.com/corral-dev/corral/internal/term"
	"github.com/corral-dev/corral/internal/tmuxwatch"
)

// Options configure a Server.
type Options struct {
	Socket   string
	StateDir string
	Loader   rules.Loader
	Logf     func(format string, args ...any)
	// KillGrace is how long panes get between SIGHUP and SIGKILL at shutdown.
	KillGrace time.Duration
	// Config is the user's config (notifications).
	Config Config
	// Inherit is the lock and listening socket the old daemon passed on at
	// a hand-over (nil: take them).
	Inherit *Inherited
}

// Server is the daemon.
type Server struct {
	opts Options
	log  *eventlog.Log
	hub  *eventlog.Hub
	// evMu makes an event's number and its publishing one step: numbered
	// by one goroutine and published by another in between, events
	// reached the hub out of order, and a stream (which skips a number
	// below the last it sent, for resuming) lost them.
	evMu   sync.Mutex
	notify *notify.Notifier
	http   *http.Server
	ln     net.Listener
	lock   *os.File
	cancel context.CancelFunc
	done   chan struct{}

	started time.Time // when the daemon started

	// hooksRefused counts hook reports refused for a wrong or missing token.
	hooksRefused atomic.Int64

	// mu guards the fields that follow.
	mu    sync.Mutex
	rules *rules.Set
	// rulesProblems are the newest load's problems: broken user files,
	// each with the version kept in force instead.
	rulesProblems []string
	board         *board.Server // the web board, once started
	panes         map[string]*entry
	order         []string // pane ids in start order
	// reserved holds the ids (and names) of panes being started outside
	// mu; they are taken until registered or given up.
	reserved map[string]string
	// spawning counts the starts in flight; stop waits for them (a while)
	// so that what they start is ended with the rest.
	spawning sync.WaitGroup
	// collected is set once stop has taken the list of panes to end.
	collected bool
	closing   bool
	shutdown  sync.Once

	// The pane table (internal/panestore), and the holders' shared log
	// (see adopt.go).
	table       *panestore.Store
	handingOver atomic.Bool
	// handoverTo is where the lock and the socket go at a hand-over, and
	// handoverLn the socket's copy to send.
	handoverTo    string
	handoverLn    *os.File
	holderLogOnce sync.Once
	holderLog     *os.File
	holders       *holder.Pool // new panes' holder processes

	// tmux are the tmux servers watched (see tmux.go).
	tmux tmuxWatches

	// fleet is the daemon's fleet node while it is in a fleet (fleet.go).
	fleet atomic.Pointer[fleetNode]
	// fleetSetMu orders the writes of fleet/config.json after the fleet started.
	fleetSetMu sync.Mutex
	// eventSockets counts the open event WebSockets.
	eventSockets atomic.Int32
}

type entry struct {
	p     unit // a *pane.Pane or a *job
	name  string
	token string // the pane's hook token, in its environment only
	// launch is what corral added to a pane's launch for its agent's
	// hooks (nil for a job).
	launch *agents.Launch
	// hooksSeen counts the hook reports this pane's token carried.
	hooksSeen atomic.Int64
	// refusal is what the agent said on its screen when it refused the
	// integration ("" while it has not).
	refusal atomic.Pointer[string]
	// refused counts hook reports with a wrong token naming this pane.
	refused atomic.Int64
	// held is the pane table's row of a pane under a holder (nil when
	// none).
	held *panestore.Held
	// approve decides the pane's permission requests (nil: none does);
	// worktree is the git worktree corral made for it.
	approve  atomic.Pointer[approver]
	worktree atomic.Pointer[worktree]
	// question holds the choices of the question the agent's hook last
	// asked, until the agent goes on.
	question atomic.Pointer[[]string]
	// tmux places a pane of a watched tmux server (nil for others).
	tmux *tmuxwatch.Pane
}

// TuneGC sets the daemon's garbage-collection target to pane.GCPercent,
// unless GOGC says otherwise.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(pane.GCPercent)
	}
}

// ErrRunning is returned when another daemon already serves the socket.
var ErrRunning = errors.New("a corral daemon is already running")

// New prepares a server: it takes the per-user lock, replaces a stale
// socket left by a crashed daemon, and opens the event log.
func New(opts Options) (*Server, error) {
	if opts.Logf == nil {
		opts.Logf = log.Printf
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = 2 * time.Second
	}
	if err := os.MkdirAll(filepath.Dir(opts.Socket), 0o700); err != nil {
		return nil, fmt.Errorf("socket folder: %w", err)
	}
	lock, ln, err := lockAndListen(opts)
	if err != nil {
		return nil, err
	}
	_ = os.Chmod(opts.Socket, 0o600)
	elog, err := eventlog.Open(opts.StateDir, 0)
	if err != nil {
		ln.Close()
		lock.Close()
		return nil, err
	}
	set, errs := opts.Loader.Load(nil)
	problems := RulesProblems(errs, "the built-in rules stay in force")
	for _, p := range problems {
		opts.Logf("rules: %s", p)
	}
	notifier, err := notify.New(opts.Config.Notify)
	if err != nil {
		ln.Close()
		lock.Close()
		elog.Close()
		return nil, err
	}
	s := &Server{opts: opts, started: time.Now(), log: elog, hub: eventlog.NewHub(), notify: notifier, ln: ln, lock: lock, rules: set, rulesProblems: problems,
		panes: map[string]*entry{}, reserved: map[string]string{}, done: make(chan struct{})}
	s.table = panestore.New(opts.StateDir, opts.Logf, s.tableRows)
	notifier.Logf = opts.Logf
	notifier.ToAttached = func(id string, b []byte) {
		if e, err := s.find(id); err == nil {
			if p, ok := e.asPane(); ok {
				p.Notify(b) // a job has no terminal to tell
			}
		}
	}
	s.http = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	return s, nil
}

// lockAndListen takes the per-user lock and listens on the socket, or
// uses those the old daemon passed on.
func lockAndListen(opts Options) (*os.File, net.Listener, error) {
	if in := opts.Inherit; in != nil {
		return in.Lock, in.Listener, nil
	}
	lock, err := os.OpenFile(opts.Socket+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("daemon lock: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, nil, fmt.Errorf("%w (socket %s)", ErrRunning, opts.Socket)
	}
	// We hold the lock, so a socket file here is a crashed daemon's.
	_ = os.Remove(opts.Socket)
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", opts.Socket)
	syscall.Umask(old)
	if err != nil {
		lock.Close()
		return nil, nil, fmt.Errorf("listen %s: %w", opts.Socket, err)
	}
	return lock, ln, nil
}

// Serve runs until ctx ends or Shutdown is called; then every pane's
// process group is ended.
func (s *Server) Serve(ctx context.Context) error {
	ctx, s.cancel = context.WithCancel(ctx)
	go func() {
		if s.opts.Loader.UserDir == "" {
			return
		}
		err := ruleswatch.Watch(ctx, s.opts.Loader, s.currentRules(), 0, func(set *rules.Set, errs []error) {
			problems := RulesProblems(errs, "the rules in force stay")
			for _, p := range problems {
				s.opts.Logf("rules: %s", p)
			}
			s.mu.Lock()
			s.rules, s.rulesProblems = set, problems
			s.mu.Unlock()
		})
		if err != nil {
			s.opts.Logf("rules: %v", err)
		}
	}()
	// Orphans of panes and jobs come to the daemon, where they are found
	// and ended with their pane, and reaped.
	if err := procs.Subreaper(); err != nil {
		s.opts.Logf("%v: processes that leave a pane's session are found by their environment only", err)
	}
	go s.reapLoop()
	scrubEnv()
	s.adoptAll()
	s.adoptJobs()
	s.mu.Lock()
	keep := make(map[string]bool, len(s.panes))
	for id := range s.panes {
		keep[id] = true
	}
	s.mu.Unlock()
	s.endLeft(s.table.KeptByHolders(keep), "when its holder or daemon was killed")
	s.watchSavedTmux()
	s.table.Start()
	go s.pruneLoop(ctx)
	s.startFleet()
	errc := make(chan error, 1)
	go func() { errc <- s.http.Serve(s.ln) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			s.stop()
			return err
		}
	}
	s.stop()
	return nil
}

// reapLoop reaps the adopted orphans that end, when a child ends
// (SIGCHLD), not on a timer: each look reads every process of the machine,
// a thousand files with a thousand panes. A look is skipped while a start
// is under way (procs.Reap), so two more follow each SIGCHLD, a second
// apart; otherwise one every reapIdle, for a signal missed.
func (s *Server) reapLoop() {
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	defer signal.Stop(chld)
	t := time.NewTimer(reapIdle)
	defer t.Stop()
	again := 0
	for {
		select {
		case <-s.done:
			procs.Reap()
			return
		case <-chld:
			again = 2
		case <-t.C:
			if again > 0 {
				again--
			}
		}
		procs.Reap()
		select { // many children ending at once are reaped together
		case <-s.done:
		case <-time.After(holder.ReapGap):
		}
		next := reapIdle
		if again > 0 {
			next = time.Second
		}
		t.Reset(next)
	}
}

// reapIdle is how often orphans are looked for when no child ended.
const reapIdle = 30 * time.Second

// SpawnWait bounds how long shutdown waits for the starts in flight.
const SpawnWait = 5 * time.Second

// Shutdown asks Serve to end.
func (s *Server) Shutdown() {
	if s.cancel != nil {
		s.cancel()
	}
}

// Done is closed when the server has stopped and every pane is reaped.
func (s *Server) Done() <-chan struct{} { return s.done }

func (s *Server) stop() {
	s.shutdown.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.mu.Unlock()
		spawned := make(chan struct{})
		go func() {
			s.spawning.Wait()
			close(spawned)
		}()
		select {
		case <-spawned:
		case <-time.After(SpawnWait):
		}
		s.mu.Lock()
		s.collected = true
		var all []unit
		for _, e := range s.panes {
			all = append(all, e.p)
		}
		s.mu.Unlock()
		var wg sync.WaitGroup
		for _, p := range all {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.endUnit(p)
			}()
		}
		wg.Wait()
		if !s.handingOver.Load() {
			s.endLeft(s.table.KeptByHolders(nil), "when it ended")
			for _, e := range s.list() {
				s.forgetJob(e) // jobs end with a shutdown, and are forgotten, as they always were
			}
		}
		s.stopTmux()
		s.stopFleet(false)
		s.table.Stop()
		s.notify.Wait()
		s.hub.CloseAll("the daemon is shutting down")
		s.mu.Lock()
		if s.board != nil {
			_ = s.board.Close()
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.http.Shutdown(ctx)
		cancel()
		_ = s.log.Close()
		if !s.passOn() {
			_ = os.Remove(s.opts.Socket)
		}
		_ = s.lock.Close()
		close(s.done)
	})
}

func (s *Server) currentRules() *rules.Set {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rules
}

// newToken returns a pane's secret for its hooks.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newIDLocked returns a short random pane id, like "k3f9q".
func (s *Server) newIDLocked() string {
	for {
		var b [4]byte
		_, _ = rand.Read(b[:])
		id := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))[:5]
		_, reserved := s.reserved[id]
		if _, taken := s.panes[id]; !taken && !reserved && s.byNameLocked(id) == nil {
			return id
		}
	}
}

func (s *Server) byNameLocked(name string) *entry {
	for _, e := range s.panes {
		if e.name == name {
			return e
		}
	}
	return nil
}

// takenLocked says why a name cannot be given to a new pane ("" when it
// can).
func (s *Server) takenLocked(name string) error {
	if name == "" {
		return nil
	}
	taken := s.byNameLocked(name) != nil
	for _, n := range s.reserved {
		taken = taken || n == name
	}
	if _, ok := s.panes[name]; ok {
		taken = true
	}
	if taken {
		return fmt.Errorf("a pane named %s exists; pick another --name, or remove it with corral rm %s", name, name)
	}
	return nil
}

// reserve takes an id and the name for a pane or job about to start;
// register or unreserve gives them back.
func (s *Server) reserve(name string) (string, *rules.Set, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return "", nil, errors.New("the daemon is shutting down")
	}
	if err := s.takenLocked(name); err != nil {
		return "", nil, err
	}
	id := s.newIDLocked()
	s.reserved[id] = name
	s.spawning.Add(1)
	return id, s.rules, nil
}

func (s *Server) unreserve(id string) {
	s.mu.Lock()
	delete(s.reserved, id)
	s.mu.Unlock()
	s.spawning.Done()
}

// register adds a started unit under its reserved id. Once the daemon's
// shutdown has taken its list of panes to end, it ends the unit instead.
func (s *Server) register(id string, e *entry) bool {
	defer s.spawning.Done()
	s.mu.Lock()
	delete(s.reserved, id)
	if s.collected {
		s.mu.Unlock()
		e.p.Close(s.opts.KillGrace)
		return false
	}
	s.panes[id] = e
	s.order = append(s.order, id)
	s.mu.Unlock()
	return true
}

// find resolves an id or a name.
func (s *Server) find(ref string) (*entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.panes[ref]; ok {
		return e, nil
	}
	if e := s.byNameLocked(ref); e != nil {
		return e, nil
	}
	return nil, fmt.Errorf("no pane named %s; see corral ls", ref)
}

// startOpts is what a start carries besides the pane's config.
type startOpts struct {
	remove   bool // removed when its program exits (--rm)
	approve  *approver
	worktree *worktree
	// base is the command the table keeps as the user's when it is not
	// cfg's (a restore starts the user's command resumed); sessions are
	// the conversations seen before.
	base     []string
	sessions []panestore.Session
}

// start runs a new pane; with o.remove, it is removed when its program
// exits. The program is started outside mu: integration files are written
// and the fork happens while other requests go on.
func (s *Server) start(cfg pane.Config, o startOpts) (*pane.Pane, error) {
	remove := o.remove
	id, set, err := s.reserveAs(cfg.ID, cfg.Name)
	if err != nil {
		return nil, err
	}
	cfg.ID = id
	cfg.Rules = set
	cfg.Starting = true
	name := cfg.Name
	userArgv, userEnv := cfg.Argv, cfg.Env
	token := newToken()
	cfg.Env = append(cfg.Env, "CORRAL_PANE="+cfg.ID, "CORRAL_TOKEN="+token, "CORRAL_SOCKET="+s.opts.Socket)
	var launch agents.Launch
	if exe, err := os.Executable(); err == nil {
		cwd := cfg.Dir
		if cwd == "" {
			cwd, _ = os.Getwd()
		}
		launch = agents.IntegrateRun(cfg.Argv, agents.Options{Hook: []string{exe, "hook"}, Env: append(os.Environ(), cfg.Env...),
			Dir: filepath.Join(s.opts.StateDir, "integrations"), Cwd: cwd})
		cfg.Argv = launch.Argv
		cfg.Env = append(cfg.Env, launch.Env...)
	} else {
		launch = agents.Launch{Argv: cfg.Argv, Missing: map[string]string{}}
		for _, a := range []string{"claude-code", "codex", "gemini"} {
			launch.Missing[a] = fmt.Sprintf("corral cannot add %s's hooks: it cannot find its own executable (%v)", a, err)
		}
	}
	files := launch.Files
	registered := make(chan bool, 1)
	added := append([]string(nil), cfg.Env[len(userEnv):]...)
	s.prepareHold(&cfg)
	cfg.OnExit = func(*pane.Pane) {
		for _, f := range files {
			_ = os.Remove(f)
		}
		s.table.Touch(id)
		if remove {
			go func() {
				if <-registered {
					_ = s.remove(id, false)
				}
			}()
		}
	}
	cfg.OnChange = func(p *pane.Pane, c detect.Change) { s.record(p.ID(), name, p.Info().Agent, c) }
	p, err := pane.Start(cfg)
	if err != nil {
		s.unreserve(id)
		for _, f := range files {
			_ = os.Remove(f)
		}
		return nil, err
	}
	e := &entry{p: p, name: name, token: token, launch: &launch}
	e.approve.Store(o.approve)
	holdForPolicy(p, o.approve)
	e.worktree.Store(o.worktree)
	if o.base != nil {
		userArgv = o.base
	}
	s.noteHeld(e, p, cfg, userArgv, userEnv, added, remove)
	if e.held != nil {
		e.held.Keep(o.sessions, o.approve.saved(), o.worktree.saved())
	}
	ok := s.register(id, e)
	registered <- ok
	if !ok {
		return nil, errors.New("the daemon is shutting down")
	}
	if e.held != nil {
		s.table.SaveRows(map[string]bool{id: true}) // before the caller learns the id: a crash now loses nothing
	}
	if launch.Watch {
		go e.watchIntegration(p)
	}
	return p, nil
}

// integration says which agent's hooks are in force for the pane, and
// when its recognised agent has none, why.
func (e *entry) integration(agent string) (string, string) {
	if e.tmux != nil {
		// An agent started outside corral: its hooks are the user's
		// opt-in (corral integrate claude-code --global).
		switch {
		case e.hooksSeen.Load() > 0:
			return agent, ""
		case agent == "claude-code":
			return "", "started outside corral: its hooks reach corral after corral integrate claude-code --global (then restart it in its pane)"
		}
		return "", ""
	}
	if j, ok := e.asJob(); ok {
		return j.agent, "" // its stream is its report
	}
	if e.launch == nil {
		return "", ""
	}
	in, problem := e.launch.Status(agent)
	if in != "" && e.hooksSeen.Load() == 0 {
		if r := e.refusal.Load(); r != nil && in == "gemini" {
			return "", *r
		}
		if d := e.launch.Doubt[in]; d != "" {
			return "", d
		}
	}
	return in, problem
}

// watchIntegration reads the pane's screen while its agent may still
// refuse corral's integration there (Gemini CLI prints a warning and runs
// without the hooks), until a hook report proves it took them.
func (e *entry) watchIntegration(p *pane.Pane) {
	t := time.NewTicker(300 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.Done():
			return
		case <-t.C:
		}
		if e.hooksSeen.Load() > 0 {
			return
		}
		if msg := agents.ScreenProblem("gemini", p.Snapshot().Lines); msg != "" {
			e.refusal.Store(&msg)
			return
		}
	}
}

// record logs and publishes one state change.
func (s *Server) record(id, name, agent string, c detect.Change) {
	if c.Held {
		s.policyHeld(id, c) // not a state of the pane's: nothing to log
		return
	}
	d := c.Decision
	ev := eventlog.Event{Time: c.At, Pane: id, Name: name, Agent: agent, State: string(d.State), Kind: d.Kind,
		Message: d.Message, Source: string(d.Source), Rule: d.Rule, Previous: string(c.Previous.State), PreviousKind: c.Previous.Kind}
	if d.State == combine.Exited || (d.Source == combine.SourceStream && (d.State == combine.Done || d.State == combine.Error)) {
		code := d.ExitCode
		ev.ExitCode = &code
	}
	ev = s.logEvent(ev)
	s.table.Touch(id)
	if !s.policyTakes(id, ev) {
		s.notify.Event(ev)
	}
}

// list returns the panes in start order.
func (s *Server) list() []*entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*entry, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.panes[id])
	}
	return out
}

// asPane returns the entry's pane, if it is one (not a headless job).
func (e *entry) asPane() (*pane.Pane, bool) {
	p, ok := e.p.(*pane.Pane)
	return p, ok
}

// asJob returns the entry's headless job, if it is one.
func (e *entry) asJob() (*job, bool) {
	j, ok := e.p.(*job)
	return j, ok
}

// styledRows is the screen with its styles; a job's lines have none.
func (e *entry) styledRows() [][]term.Run {
	if p, ok := e.asPane(); ok {
		return p.StyledRows()
	}
	lines := e.p.Snapshot().Lines
	out := make([][]term.Run, len(lines))
	for i, l := range lines {
		out[i] = []term.Run{{Text: l}}
	}
	return out
}

// ansi is the screen as a terminal would draw it; a job's is its lines.
func (e *entry) ansi() string {
	if p, ok := e.asPane(); ok {
		return p.ANSI()
	}
	return strings.Join(e.p.Snapshot().Lines, "\r\n")
}

// startJob registers and runs a headless job: held (it outlives the
// daemon, see jobstore.go) when it can be, otherwise guarded (it ends
// with the daemon).
func (s *Server) startJob(name string, o headless.Options, keep jobKeep) (*job, error) {
	id, _, err := s.reserve(name)
	if err != nil {
		return nil, err
	}
	agent := o.Agent
	o.Mark = "CORRAL_JOB=" + id
	o.Env = append(o.Env[:len(o.Env):len(o.Env)], "CORRAL_SOCKET="+s.opts.Socket)
	o.Guard = []string{holderExe, "guard"}
	var onEnd func(headless.Outcome, time.Time)
	if heldMode(o) {
		rec, err := s.holdJob(id, name, &o, keep)
		if err != nil {
			s.opts.Logf("job %s: %v; it runs guarded, and ends with this daemon", id, err)
		} else {
			onEnd = s.keepOutcome(o.Spool, rec)
		}
	}
	j := startJob(id, name, o, func(c detect.Change) { s.record(id, name, agent, c) }, onEnd)
	j.fleet = keep.Fleet
	if !s.register(id, &entry{p: j, name: name}) {
		return nil, errors.New("the daemon is shutting down")
	}
	return j, nil
}

// ErrRunning is returned by remove for a pane whose program runs.
var errStillRunning = errors.New("is still running; end it with corral kill, or remove it with corral rm --force")

// remove forgets an ended pane or job: its name is free again, and what
// it held (screen, events, watchers) goes with its entry. With force, a
// running one is ended first. A "removed" event says so.
func (s *Server) remove(ref string, force bool) error {
	e, err := s.find(ref)
	if err != nil {
		return err
	}
	select {
	case <-e.p.Done():
	default:
		if !force {
			return fmt.Errorf("pane %s %w", ref, errStillRunning)
		}
		e.p.Close(s.opts.KillGrace)
	}
	id := e.p.ID()
	s.mu.Lock()
	if s.panes[id] != e {
		s.mu.Unlock()
		return nil // removed meanwhile
	}
	delete(s.panes, id)
	for i, o := range s.order {
		if o == id {
			s.order = append(s.order[:i:i], s.order[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	s.notify.Forget(id)
	s.forgetJob(e)
	in := e.p.Info()
	ev := eventlog.Event{Time: time.Now(), Pane: id, Name: e.name, Agent: in.Agent, State: StateRemoved,
		Previous: string(in.Decision.State), PreviousKind: in.Decision.Kind}
	s.logEvent(ev)
	return nil
}

// logEvent numbers an event, writes it to the log and publishes it, in
// the order of the numbers.
func (s *Server) logEvent(ev eventlog.Event) eventlog.Event {
	s.evMu.Lock()
	defer s.evMu.Unlock()
	ev, err := s.log.Append(ev)
	if err != nil {
		s.opts.Logf("event log: %v", err)
	}
	s.hub.Publish(ev)
	return ev
}

// StateRemoved is the state of the event that says a pane or job was
// removed; no pane is ever in it.
const StateRemoved = "removed"

// pruneLoop removes panes and jobs ended longer ago than the config's
// [panes] prune_after.
func (s *Server) pruneLoop(ctx context.Context) {
	after := s.opts.Config.Panes.PruneAfter.D()
	if after <= 0 {
		return
	}
	every := min(max(after/4, 10*time.Millisecond), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, e := range s.list() {
			select {
			case <-e.p.Done():
			default:
				continue
			}
			if at := endedAt(e); !at.IsZero() && time.Since(at) >= after {
				_ = s.remove(e.p.ID(), false)
			}
		}
	}
}

// endedAt is when a pane's program or a job ended.
func endedAt(e *entry) time.Time {
	if j, ok := e.asJob(); ok {
		return j.EndedAt()
	}
	return e.p.Info().ExitedAt
}
