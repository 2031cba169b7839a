package holder

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/procs"
)

// exitWatch waits for the programs of a holder process's panes: one
// goroutine on SIGCHLD for all of them, where a wait each held a
// goroutine, a pidfd and its poller entry for as long as the pane ran.
// A program found exited is not collected here: its pane's reapExited
// does that with cmd.Wait, in a goroutine of its own from then on.
type exitWatch struct {
	mu      sync.Mutex
	running map[int]func() // a program's pid, and what to call once it has exited
	added   chan struct{}
}

// exitCheck is a look at the running programs without a SIGCHLD, in case
// one was missed (each is a read of /proc per program).
const exitCheck = 30 * time.Second

func newExitWatch() *exitWatch {
	w := &exitWatch{running: map[int]func(){}, added: make(chan struct{}, 1)}
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	go w.run(chld)
	return w
}

// add watches pid, a child of this process, and calls exited in a new
// goroutine once it has exited.
func (w *exitWatch) add(pid int, exited func()) {
	w.mu.Lock()
	w.running[pid] = exited
	w.mu.Unlock()
	// Looked at once added: a program that exited before, whose SIGCHLD
	// was taken already, counts.
	select {
	case w.added <- struct{}{}:
	default:
	}
}

func (w *exitWatch) run(chld <-chan os.Signal) {
	t := time.NewTicker(exitCheck)
	defer t.Stop()
	for {
		select {
		case <-chld:
		case <-w.added:
		case <-t.C:
		}
		w.check()
	}
}

// check calls the exited function of every program that has exited. A
// SIGCHLD may stand for many exits: every program is looked at.
func (w *exitWatch) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for pid, exited := range w.running {
		// A zombie until its pane's cmd.Wait: nothing else waits for it
		// (procs.Reap leaves the children that Spawn started alone).
		if _, zombie, ok := procs.Parent(pid); !ok || zombie {
			delete(w.running, pid)
			go exited()
		}
	}
}
