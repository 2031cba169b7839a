package procs

import (
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/osproc"
)

// Left is a process a pane or job started that is still there when the
// holder or daemon that ran it is gone: found by its environment, which it
// inherited from the unit and keeps wherever it went (setsid, another
// group, re-parented to init).
type Left struct {
	PID int
	// Start is its start time (osproc.Proc.Start): it is signalled only
	// while the process at PID is still that one.
	Start uint64
	// Key and ID are the mark it carries: "CORRAL_PANE" and the pane's id.
	Key, ID string
	// Command is its command line, for the log.
	Command string
}

// FindLeft returns this user's processes, other than the caller and its
// ancestors, whose environment holds the entry owner (such as
// "CORRAL_SOCKET=/run/user/1000/corral.sock": started by this daemon's
// panes and jobs) and an entry for one of keys ("CORRAL_PANE"), with the
// id it names.
func FindLeft(owner string, keys ...string) []Left {
	if owner == "" || len(keys) == 0 {
		return nil
	}
	skip := map[int]bool{}
	for pid := os.Getpid(); pid > 1 && !skip[pid]; {
		skip[pid] = true
		ppid, _, ok := Parent(pid)
		if !ok {
			break
		}
		pid = ppid
	}
	uid := os.Getuid()
	var out []Left
	for _, pid := range osproc.PIDs() {
		if pid <= 1 || skip[pid] {
			continue
		}
		if u, ok := osproc.Owner(pid); !ok || u != uid {
			continue
		}
		// Most processes are not the owner's: their environment says so
		// at once, and their stat (which the kernel computes at each
		// read: the dearer of the two) is not read.
		if env, err := osproc.Environ(pid); err != nil || !slices.Contains(env, owner) {
			continue
		}
		// Its start time before and after its environment is read again:
		// the same, the environment is this process's.
		before, ok := osproc.Stat(pid)
		if !ok {
			continue
		}
		env, err := osproc.Environ(pid)
		if err != nil || !slices.Contains(env, owner) {
			continue
		}
		var found Left
		for _, s := range env {
			for _, k := range keys {
				if id, ok := strings.CutPrefix(s, k+"="); ok && id != "" {
					found = Left{PID: pid, Key: k, ID: id}
				}
			}
		}
		if found.PID == 0 {
			continue
		}
		if after, ok := osproc.Stat(pid); !ok || after.Zombie() || after.Start != before.Start {
			continue
		}
		found.Start = before.Start
		found.Command = osproc.CommandLine(pid)
		out = append(out, found)
	}
	return out
}

// EndLeft ends the processes find returns: SIGTERM (and SIGCONT, so a
// stopped one takes it), up to grace for them to go, then SIGKILL, again
// while find still finds some (they may fork meanwhile), for at most 5 s.
// It returns every process it signalled.
func EndLeft(find func() []Left, grace time.Duration) []Left {
	var ended []Left
	seen := map[int]bool{}
	note := func(ls []Left) {
		for _, l := range ls {
			if !seen[l.PID] {
				seen[l.PID] = true
				ended = append(ended, l)
			}
		}
	}
	left := find()
	if len(left) == 0 {
		return nil
	}
	note(left)
	for _, l := range left {
		_ = osproc.Signal(l.PID, l.Start, syscall.SIGTERM)
		_ = osproc.Signal(l.PID, l.Start, syscall.SIGCONT)
	}
	deadline := time.Now().Add(grace)
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		Reap()
		left = find()
	}
	deadline = time.Now().Add(5 * time.Second)
	for len(left) > 0 && time.Now().Before(deadline) {
		note(left)
		for _, l := range left {
			_ = osproc.Signal(l.PID, l.Start, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
		Reap()
		left = find()
	}
	return ended
}
