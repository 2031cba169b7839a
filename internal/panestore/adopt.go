package panestore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/combine"
	"github.com/corral-dev/corral/internal/holder"
	"github.com/corral-dev/corral/internal/osproc"
	"github.com/corral-dev/corral/internal/procs"
)

// adoptWait bounds the connection to one holder at start.
const adoptWait = 2 * time.Second

// strayWait bounds the look at one holder socket the table does not name.
const strayWait = time.Second

// Open reads the table for a daemon that starts, and returns the rows to
// adopt: the table's panes and the lost ones whose holders still run (they
// refused, or were slow, the last time), one row per id and per socket.
// The other lost rows are kept as lost, and the holder sockets the table
// does not name are dealt with (EndStrays).
func (t *Store) Open() []Row {
	f := t.load()
	var lost []Row
	for _, row := range f.Lost {
		if HolderAlive(row.Holder) {
			f.Panes = append(f.Panes, row)
		} else {
			lost = append(lost, row)
		}
	}
	t.mu.Lock()
	t.lost = lost
	t.mu.Unlock()
	t.endStrays(f)
	// One connection per holder: a second would take it from the first.
	seen := map[string]bool{}
	var rows []Row
	for _, row := range f.Panes {
		if seen[row.ID] || seen["sock:"+row.Socket] {
			t.logf("pane table: a second entry for pane %s (%s) skipped", row.ID, row.Socket)
			continue
		}
		seen[row.ID], seen["sock:"+row.Socket] = true, true
		rows = append(rows, row)
	}
	return rows
}

// Dial connects to the holder of row's pane, or says why it cannot be
// adopted.
func (t *Store) Dial(row Row) (*holder.Conn, error) {
	if row.ID == "" || row.Socket == "" || len(row.Secret) < 32 || len(row.Launch) == 0 {
		return nil, errors.New("the table's entry lacks an id, a socket, a secret or a command")
	}
	if filepath.Dir(row.Socket) != filepath.Join(t.dir, "holders") {
		return nil, fmt.Errorf("its holder socket %s is not in this daemon's state folder", row.Socket)
	}
	if _, err := holder.SocketDir(t.dir); err != nil {
		return nil, err
	}
	hc, err := holder.Dial(row.Socket, row.Secret, adoptWait)
	if err != nil {
		absent := errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
		// A holder process may live on for other panes: the pane is gone
		// when nothing listens on its socket and its program has ended.
		// A program whose holder is gone has lost its terminal: what it
		// left running is ended (endLeft) and the pane can start again.
		if absent && (!ProgramRuns(row) || !HolderAlive(row.Holder)) {
			_ = os.Remove(row.Socket) // a socket file left by a holder that is gone
			return nil, fmt.Errorf("its holder (pid %d) no longer holds it (the machine restarted, or the holder was killed): corral restore starts it again", row.Holder)
		}
		return nil, fmt.Errorf("its socket is not this pane's holder, or refused us: %w", err)
	}
	return hc, nil
}

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
func (t *Store) endStrays(f File) {
	dir := filepath.Join(t.dir, "holders")
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
			t.logf("holder socket %s is not in the pane table and cannot be checked (%v); left alone", path, err)
		case t.unread:
			t.logf("holder %d (%s) left running: the pane table could not be read, so its pane is not known; "+
				"end its program (its processes carry CORRAL_PANE=%s), and the holder lets it go", pid, path, strings.TrimSuffix(de.Name(), ".sock"))
		case !HolderAlive(pid):
			t.logf("the process listening on %s (pid %d) is not a corral holder; left alone", path, pid)
		default:
			// Only that pane: its holder process may serve others.
			err := holder.EndStray(path, false, strayWait)
			if errors.Is(err, holder.ErrOldHolder) {
				err = syscall.Kill(pid, syscall.SIGTERM) // one pane per process then
			}
			t.logf("holder %d (%s): its pane was started by a daemon that ended before noting it, and no daemon "+
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

// Logged is a pane's newest logged decision and when it was made.
type Logged struct {
	D  combine.Decision
	At time.Time
}

// LastKnown is the state the pane was last known in, and since when: the
// table's row when it agrees with the log (it says more: the rule, the
// source, a message kept), else the log's, which is written first.
func LastKnown(row Row, ev Logged) (combine.Decision, time.Time) {
	d := combine.Decision{State: combine.State(row.State), Kind: row.Kind, Message: row.Message,
		Source: combine.Source(row.Source), Rule: row.Rule}
	if ev.D.State == "" || ev.D.State == d.State && ev.D.Kind == d.Kind && (d.State != combine.Blocked || ev.D.Message == d.Message) {
		return d, row.Since
	}
	return ev.D, ev.At
}

// ProgramRuns reports whether the pane's program (its first process) may
// still run: a live process of its pid that carries the pane's mark, or is
// a child of the pane's holder (a program may have cleared its
// environment). It errs on the side of running: starting a program again
// while it runs would run it twice.
func ProgramRuns(row Row) bool {
	if row.PID <= 0 {
		return false
	}
	if row.ID != "" && procs.Marked(row.PID, "CORRAL_PANE="+row.ID) {
		return true
	}
	ppid, zombie, ok := procs.Parent(row.PID)
	return ok && !zombie && row.Holder > 0 && ppid == row.Holder
}

// HolderAlive says whether pid is a running holder (after a reboot the pid
// may be anyone's).
func HolderAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	args, err := osproc.Cmdline(pid)
	return err == nil && len(args) > 1 && args[1] == "hold"
}
