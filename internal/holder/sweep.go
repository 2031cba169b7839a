package holder

import (
	"bytes"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/procs"
)

// A pane's processes are found by reading /proc: every process's parent,
// group and session (procs.Group). One look reads the stat of every
// process on the machine, and ending a pane takes three or more; when a
// holder process ended its panes one look each, ending a thousand panes
// read /proc three thousand times, a thousand files each (minutes of CPU).
// So the looks of one holder process are shared: the panes that ask while
// a look runs are all served by the next one, each with the processes of
// its own group as procs.Group finds them.

// sweeper serves the looks of one holder process.
type sweeper struct {
	mu    sync.Mutex
	queue []*sweep
	busy  bool // a goroutine is taking the queue
}

// sweep is one pane's signal, answered with how many processes it found.
type sweep struct {
	group procs.Group
	sig   syscall.Signal
	found int
	done  chan struct{}
}

var sweeps sweeper

// hangUpThenKill asks a look for SIGHUP then SIGKILL to each process.
const hangUpThenKill = syscall.Signal(-1)

// signal sends sig to every process of g (and SIGCONT after it, so a
// stopped process takes it), as procs.Group.Signal does, from a look at
// /proc begun after the call; it returns how many it found.
func (s *sweeper) signal(g procs.Group, sig syscall.Signal) int {
	r := &sweep{group: g, sig: sig, done: make(chan struct{})}
	s.mu.Lock()
	s.queue = append(s.queue, r)
	if !s.busy {
		s.busy = true
		go s.run()
	}
	s.mu.Unlock()
	<-r.done
	return r.found
}

// hangUpAndKill sends SIGHUP then SIGKILL to every process of g, again
// while some are left (one may fork while it is being killed), for at
// most max: procs.Group's Signal(SIGHUP) then KillAll, with one look fewer.
// It reports whether none is left.
func (s *sweeper) hangUpAndKill(g procs.Group, max time.Duration) bool {
	deadline := time.Now().Add(max)
	for first := true; ; first = false {
		sig := syscall.SIGKILL
		if first {
			sig = hangUpThenKill
		}
		if s.signal(g, sig) == 0 {
			return true
		}
		procs.Reap()
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// run takes the queue until it is empty: each round one look serves every
// request made before it began.
func (s *sweeper) run() {
	for {
		s.mu.Lock()
		batch := s.queue
		s.queue = nil
		if len(batch) == 0 {
			s.busy = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		t := readTable()
		roots := make(map[int]bool, len(batch))
		for _, r := range batch {
			roots[r.group.Root] = true
		}
		for _, r := range batch {
			pids := t.descendants(r.group, roots)
			for _, pid := range pids {
				if r.sig == hangUpThenKill {
					_ = syscall.Kill(pid, syscall.SIGHUP)
					_ = syscall.Kill(pid, syscall.SIGKILL)
					continue
				}
				_ = syscall.Kill(pid, r.sig)
				if r.sig != syscall.SIGKILL && r.sig != syscall.SIGSTOP && r.sig != syscall.SIGTSTP && r.sig != 0 {
					_ = syscall.Kill(pid, syscall.SIGCONT)
				}
			}
			r.found = len(pids)
			close(r.done)
		}
	}
}

// proc is one line of the process table.
type proc struct {
	pid, ppid, pgid, sid int
	zombie               bool
}

// procTable is one look at every process, with each one's children.
type procTable struct {
	procs    map[int]proc
	children map[int][]int
	members  map[int][]int // the processes of each session and group, by its id
}

func parseStat(pid int, b []byte) (proc, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+3 >= len(b) {
		return proc{}, false
	}
	p := proc{pid: pid, zombie: b[i+2] == 'Z'}
	rest := b[i+3:]
	var ok bool
	for _, f := range []*int{&p.ppid, &p.pgid, &p.sid} {
		if *f, rest, ok = nextInt(rest); !ok {
			return proc{}, false
		}
	}
	return p, true
}

// nextInt parses the space-led decimal at the start of b and returns what
// follows it.
func nextInt(b []byte) (int, []byte, bool) {
	if len(b) < 2 || b[0] != ' ' {
		return 0, b, false
	}
	b = b[1:]
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	v, k := 0, 0
	for k < len(b) && b[k] >= '0' && b[k] <= '9' {
		v = v*10 + int(b[k]-'0')
		k++
	}
	if k == 0 {
		return 0, b, false
	}
	if neg {
		v = -v
	}
	return v, b[k:], true
}

// descendants is procs.Group.Descendants on this look: g's first process,
// its session and group, the holder's adopted orphans that carry g.Mark,
// and the process trees below them, zombies left out. The holder's
// children that are the first process of a pane being looked for (roots)
// are that pane's, not orphans: their environment is not read.
func (t procTable) descendants(g procs.Group, roots map[int]bool) []int {
	self := os.Getpid()
	seen := map[int]bool{}
	var queue []int
	add := func(pid int) {
		if pid > 1 && pid != self && !seen[pid] {
			seen[pid] = true
			queue = append(queue, pid)
		}
	}
	// The pid may be another process's now (RootState): not it, nor its
	// session or group, is g's then.
	state := g.RootState()
	if _, ok := t.procs[g.Root]; ok && state == procs.RootOurs {
		add(g.Root)
	}
	if state != procs.RootOther {
		for _, pid := range t.members[g.Root] {
			if g.Member(pid, state) {
				add(pid)
			}
		}
	}
	if g.Mark != "" {
		for _, c := range t.children[self] {
			if !roots[c] && !seen[c] && procs.Marked(c, g.Mark) {
				add(c)
			}
		}
	}
	for i := 0; i < len(queue); i++ {
		for _, c := range t.children[queue[i]] {
			add(c)
		}
	}
	out := queue[:0]
	for _, pid := range queue {
		if !t.procs[pid].zombie {
			out = append(out, pid)
		}
	}
	return out
}
