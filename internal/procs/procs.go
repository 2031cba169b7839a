// Package procs finds and ends every process a pane or job started,
// through osproc's process table: the process tree below its first
// process, the processes of its session or group, and the orphans the
// daemon (a child subreaper) adopted that carry its mark in their
// environment. It also
// reaps those adopted orphans, which nothing else waits for.
package procs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/osproc"
)

// table reads every process's parent, group, session and state.
func table() map[int]osproc.Proc { return osproc.Table() }

// Parent returns process pid's parent and whether it is a zombie (ok
// false: no such process).
func Parent(pid int) (ppid int, zombie bool, ok bool) { return osproc.Parent(pid) }

// Marked reports whether process pid runs and its environment holds mark
// (a whole "K=V" entry).
func Marked(pid int, mark string) bool { return hasMark(pid, mark) }

// hasMark reports whether the process's environment holds mark (a whole
// "K=V" entry).
func hasMark(pid int, mark string) bool { return osproc.HasEnv(pid, mark) }

// Subreaper makes the calling process a child subreaper: orphaned
// descendants are re-parented to it instead of init, where Descendants
// finds them and Reap waits for them. Where the system has none (macOS)
// it fails, and orphans are found by their mark only once init has them.
func Subreaper() error {
	if err := osproc.Subreaper(); err != nil {
		return err
	}
	subreaper.Store(true)
	return nil
}

var subreaper atomic.Bool

// Group of a unit's processes: Root is its first process (leader of its
// own session or group); Mark is an environment entry every process it
// starts inherits ("CORRAL_PANE=k3f9q"), which finds the adopted orphans
// that left its session.
//
// Start is Root's start time (osproc.Proc.Start), taken when the group was
// made: pids come round (within a minute on a busy machine), and the
// process now at pid Root is the group's only if it started then. 0 is
// unknown (a record kept before start times were): whatever runs at Root
// is taken for the group's, as it always was.
type Group struct {
	Root  int
	Start uint64
	Mark  string
}

// NewGroup is the group of process root, which the caller started and has
// not waited for (its pid is still its own, even if it has exited), with
// root's start time.
func NewGroup(root int, mark string) Group {
	g := Group{Root: root, Mark: mark}
	if p, ok := osproc.Stat(root); ok {
		g.Start = p.Start
	}
	return g
}

// RootState is how the process now at a group's Root stands to the group.
type RootState int

const (
	// RootOurs: the group's first process runs (or is a zombie) at Root,
	// or the group's start time is unknown. Root, its tree, and its
	// session and group are the group's.
	RootOurs RootState = iota
	// RootGone: no process has the pid. The processes of session or group
	// Root are the group's only if they carry its Mark (when it has one):
	// a session's id stays while it has members, and the pid may have
	// been another's since, who led a session of its own and exited.
	RootGone
	// RootOther: another process has the pid now. Neither it, nor its
	// tree, nor session or group Root (its own, since the pid was free
	// when it came) are the group's: only the orphans that carry Mark are.
	RootOther
)

func (s RootState) String() string {
	switch s {
	case RootOurs:
		return "ours"
	case RootGone:
		return "gone"
	}
	return "another's"
}

// RootState looks at the process at g.Root now.
func (g Group) RootState() RootState {
	if g.Root <= 0 || g.Start == 0 {
		return g.rootState(osproc.Proc{}, false) // nothing to compare
	}
	p, ok := osproc.Stat(g.Root)
	return g.rootState(p, ok)
}

func (g Group) rootState(p osproc.Proc, ok bool) RootState {
	switch {
	case g.Root <= 0:
		return RootOther // no pid: nothing is reached through it
	case g.Start == 0:
		return RootOurs
	case !ok:
		return RootGone
	case p.Start != g.Start:
		return RootOther
	}
	return RootOurs
}

// Member reports whether process pid, found in session or group g.Root,
// is g's while its root stands as s (RootState).
func (g Group) Member(pid int, s RootState) bool {
	switch s {
	case RootOurs:
		return true
	case RootGone:
		return g.Mark == "" || hasMark(pid, g.Mark)
	}
	return false
}

// Descendants returns the live processes that belong to g, Root included
// while it lives: its process tree, its session and group, and the
// daemon's adopted orphans (and their trees) that carry g.Mark or belong
// to its session. A pid Root that another process has now brings in
// nothing (RootState).
func (g Group) Descendants() []int {
	return g.descendants(table())
}

// members is Descendants with each process's line of the table, whose
// start time pins the process a signal is for.
func (g Group) members() []osproc.Proc {
	t := table()
	pids := g.descendants(t)
	out := make([]osproc.Proc, len(pids))
	for i, pid := range pids {
		out[i] = t[pid]
	}
	return out
}

func (g Group) descendants(t map[int]osproc.Proc) []int {
	children := map[int][]int{}
	for _, p := range t {
		children[p.PPID] = append(children[p.PPID], p.PID)
	}
	self := os.Getpid()
	seen := map[int]bool{}
	var queue []int
	add := func(pid int) {
		if pid > 1 && pid != self && !seen[pid] {
			seen[pid] = true
			queue = append(queue, pid)
		}
	}
	root, ok := t[g.Root]
	state := g.rootState(root, ok)
	if ok && state == RootOurs {
		add(g.Root)
	}
	if state != RootOther {
		for _, p := range t {
			if (p.SID == g.Root || p.PGID == g.Root) && g.Member(p.PID, state) {
				add(p.PID)
			}
		}
	}
	owned := ownedSet()
	for _, c := range children[self] {
		if !owned[c] && hasMark(c, g.Mark) {
			add(c)
		}
	}
	for i := 0; i < len(queue); i++ {
		for _, c := range children[queue[i]] {
			add(c)
		}
	}
	var out []int
	for _, pid := range queue {
		if !t[pid].Zombie() {
			out = append(out, pid)
		}
	}
	return out
}

// SignalGroup sends sig to process group Root at once (kill(-Root)), only
// while Root is the group's own process (RootOurs): a group of that id is
// then the group's. Otherwise nothing is sent, and Signal finds what is
// left of the group one process at a time. A group already empty is no
// error.
func (g Group) SignalGroup(sig syscall.Signal) error {
	if g.RootState() != RootOurs {
		return nil
	}
	if err := syscall.Kill(-g.Root, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process group %d: %w", g.Root, err)
	}
	return nil
}

// Signal sends sig to every process of g (and SIGCONT after it, so a
// stopped process takes it) and returns how many it found.
func (g Group) Signal(sig syscall.Signal) int {
	ps := g.members()
	for _, p := range ps {
		// A process that ended since the table was read, its pid taken
		// by another program meanwhile, is not signalled (osproc.Signal).
		_ = osproc.Signal(p.PID, p.Start, sig)
		if sig != syscall.SIGKILL && sig != syscall.SIGSTOP && sig != syscall.SIGTSTP && sig != 0 {
			_ = osproc.Signal(p.PID, p.Start, syscall.SIGCONT)
		}
	}
	return len(ps)
}

// KillAll sends SIGKILL to every process of g until none is left (a
// process may fork while it is being killed), for at most max. It
// reports whether none is left.
func (g Group) KillAll(max time.Duration) bool {
	deadline := time.Now().Add(max)
	for {
		if g.Signal(syscall.SIGKILL) == 0 {
			return true
		}
		Reap()
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The daemon's own children, started by os/exec, whose exit status their
// Cmd.Wait collects: Reap must leave them alone. Starting holds ownMu for
// reading from before the fork until the child is recorded, and Reap holds
// it for writing, so Reap never sees an unrecorded child of ours.
var (
	ownMu sync.RWMutex
	owned = map[int]bool{}
)

// Spawn runs start (which forks a child and returns its pid, or an error)
// and records the child as the daemon's own until Release.
func Spawn(start func() (int, error)) (int, error) {
	ownMu.RLock()
	defer ownMu.RUnlock()
	pid, err := start()
	if err == nil && pid > 0 {
		ownedMu.Lock()
		owned[pid] = true
		ownedMu.Unlock()
	}
	return pid, err
}

// Release forgets a child Spawn recorded, once it has been waited for.
func Release(pid int) {
	ownedMu.Lock()
	delete(owned, pid)
	ownedMu.Unlock()
}

var ownedMu sync.Mutex // guards owned's map itself

func ownedSet() map[int]bool {
	ownedMu.Lock()
	defer ownedMu.Unlock()
	out := make(map[int]bool, len(owned))
	for k := range owned {
		out[k] = true
	}
	return out
}

// Reap waits for the daemon's adopted orphans that have ended, so none
// stays a zombie. It leaves alone the children os/exec waits for: those
// Spawn recorded, and those in the daemon's own process group (a
// notification command). It returns how many it reaped.
func Reap() int {
	if !subreaper.Load() {
		return 0
	}
	// A start under way (its fork and exec, which a program on a hung
	// mount can hold up) is not waited for: its child may not be recorded
	// yet, so this round is skipped; the next reaps (a child's exit, or a
	// caller's loop, comes again).
	if !ownMu.TryLock() {
		return 0
	}
	defer ownMu.Unlock()
	self, myGroup := os.Getpid(), syscall.Getpgrp()
	own := ownedSet()
	n := 0
	for _, p := range table() {
		if p.PPID != self || !p.Zombie() || own[p.PID] || p.PGID == myGroup {
			continue
		}
		var ws syscall.WaitStatus
		if got, err := syscall.Wait4(p.PID, &ws, syscall.WNOHANG, nil); err == nil && got == p.PID {
			n++
		}
	}
	return n
}

// ReapLoop reaps adopted orphans every interval until stop is closed.
func ReapLoop(interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			Reap()
			return
		case <-t.C:
			Reap()
		}
	}
}

// WaitExit blocks until process pid (a child of the caller) has exited,
// without collecting its status: the caller's Wait still gets it. No OS
// thread stays blocked per waiting child where the system allows.
func WaitExit(pid int) { osproc.WaitExit(pid) }

// Resolve finds the program to run as the user who typed it would: a
// name with a slash relative to dir, a bare name on the PATH of env (the
// caller's, when the request carries it), else the daemon's.
func Resolve(name, dir string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) && dir != "" {
			name = filepath.Join(dir, name)
		}
		return exec.LookPath(name)
	}
	path := os.Getenv("PATH")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) && dir != "" {
			d = filepath.Join(dir, d)
		}
		if p, err := exec.LookPath(filepath.Join(d, name)); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q is not on the PATH (%s)", name, path)
}
