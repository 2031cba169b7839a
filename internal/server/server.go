// Package server is the daemon: it hosts panes, keeps the event log, and
// serves the HTTP/JSON API and the event stream on a unix socket that only
// its user can open.
package server

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/board"
	"github.com/corral-dev/corral/internal/config"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/fleetlink"
	"github.com/corral-dev/corral/internal/handover"
	"github.com/corral-dev/corral/internal/holder"
	"github.com/corral-dev/corral/internal/jobs"
	"github.com/corral-dev/corral/internal/notify"
	"github.com/corral-dev/corral/internal/pane"
	"github.com/corral-dev/corral/internal/paneset"
	"github.com/corral-dev/corral/internal/procs"
	"github.com/corral-dev/corral/internal/rules"
	"github.com/corral-dev/corral/internal/ruleswatch"
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
	Config config.Config
	// Inherit is the lock and listening socket the old daemon passed on at
	// a hand-over (nil: take them).
	Inherit *handover.Inherited
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

	// mu guards the rules in force, the web board, and the listener and
	// lock once the daemon serves (keepSocket may replace them); the panes
	// and jobs are the set's, under its own lock.
	mu    sync.Mutex
	rules *rules.Set
	// rulesProblems are the newest load's problems: broken user files,
	// each with the version kept in force instead.
	rulesProblems []string
	board         *board.Server // the web board, once started

	shutdown sync.Once

	// set is the daemon's panes, and its jobs beside them
	// (internal/paneset): their table, the pane table, adoption, restore.
	set *paneSet
	// jobs starts the headless jobs (internal/jobs) and takes the held
	// ones again; they are registered in set.
	jobs *jobs.Host
	// handoverTo is where the lock and the socket go at a hand-over, and
	// handoverLn the socket's copy to send.
	handoverTo string
	handoverLn *os.File

	// fleet is the daemon's bridge to its fleet (internal/fleetlink),
	// which sees the daemon as fleetLocal; it serves the API's fleet
	// routes.
	fleet *fleetlink.Link
}

// TuneGC sets the daemon's garbage-collection target to pane.GCPercent,
// unless GOGC says otherwise. Its heap profile keeps sampling (unlike a
// holder's): it is served on the socket, and a leak is found in the
// daemon that has it, not in one started again to look.
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
	problems := ruleswatch.Problems(errs, "the built-in rules stay in force")
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
		done: make(chan struct{})}
	s.set = s.newSet()
	s.jobs = s.newJobs()
	s.fleet = fleetlink.New(fleetLocal{s}, fleetlink.Options{StateDir: opts.StateDir, Logf: opts.Logf})
	notifier.Logf = opts.Logf
	notifier.ToAttached = func(id string, b []byte) {
		if e, err := s.findPane(id); err == nil { // a job has no terminal to tell
			e.P.Notify(b)
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
	ln, err := listenUnix(opts.Socket)
	if err != nil {
		lock.Close()
		return nil, nil, err
	}
	return lock, ln, nil
}

// listenUnix listens on a socket file only the user may use.
func listenUnix(path string) (net.Listener, error) {
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	return ln, nil
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
			problems := ruleswatch.Problems(errs, "the rules in force stay")
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
	s.set.Adopt(s.lastLogged)
	s.adoptJobs()
	s.endLeft(s.set.KeptByHolders(s.set.PaneIDs()), "when its holder or daemon was killed")
	s.set.WatchSavedTmux()
	s.set.StartTable()
	go s.pruneLoop(ctx)
	s.fleet.Start()
	errc := make(chan error, 1)
	ln := s.ln
	go func() { errc <- s.http.Serve(ln) }()
	go s.keepSocket(ctx)
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
const SpawnWait = paneset.SpawnWait

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
		panes, jobs := s.set.Collect()
		var wg sync.WaitGroup
		for _, p := range panes {
			wg.Go(func() { s.set.EndPane(p) })
		}
		for _, j := range jobs {
			wg.Go(func() { s.endJob(j) })
		}
		wg.Wait()
		if !s.set.HandingOver() {
			s.endLeft(s.set.KeptByHolders(nil), "when it ended")
			for _, j := range jobs {
				s.forgetJob(j) // jobs end with a shutdown, and are forgotten, as they always were
			}
		}
		s.set.StopTmux()
		s.fleet.Stop(false)
		s.set.StopTable()
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
		s.mu.Lock()
		_ = s.lock.Close()
		s.mu.Unlock()
		close(s.done)
	})
}

func (s *Server) currentRules() *rules.Set {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rules
}
