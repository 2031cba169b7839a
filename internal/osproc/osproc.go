// Package osproc is where corral meets the operating system's process
// model. Everything that differs between Linux and macOS sits here, behind
// build tags: the process table (Linux: /proc; macOS: sysctl kern.proc),
// a process's environment, command line and name, becoming a child
// subreaper (Linux only), waiting for a child's exit without collecting
// it (Linux: a pidfd; macOS: kqueue EVFILT_PROC), the other side of a
// pseudo-terminal (Linux: TIOCGPTPEER; macOS: its path), the credentials
// of a unix socket's peer, the foreground process group of a process's
// terminal, flushing a terminal's input and its termios requests, the
// descriptors the process holds, and memory shared between processes and
// sealed at its size (Linux: a memfd; macOS has none). The rest of corral
// calls these and knows nothing of either system.
package osproc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Proc is one line of the process table.
type Proc struct {
	PID, PPID int
	PGID, SID int // process group and session
	// State is the scheduler's state as Linux's letters name it: 'R'
	// running, 'S' sleeping, 'T' stopped, 'Z' zombie; other letters for
	// the states only one system has.
	State byte
	// Start is when the process started as the system counts it (Linux:
	// clock ticks since boot; macOS: microseconds since the epoch): with
	// the pid, it names one process, since a pid comes round again. 0:
	// unknown.
	Start uint64
}

// Zombie reports whether the process has exited and waits to be reaped.
func (p Proc) Zombie() bool { return p.State == 'Z' }

// ErrNoSubreaper is Subreaper's error where the system has no child
// subreapers: orphans go to init (launchd) and are found only by their
// environment.
var ErrNoSubreaper = errors.New("this system has no child subreaper: orphaned processes go to init")

// Parent returns process pid's parent and whether it is a zombie (ok
// false: no such process).
func Parent(pid int) (ppid int, zombie bool, ok bool) {
	p, ok := Stat(pid)
	return p.PPID, p.Zombie(), ok
}

// HasEnv reports whether process pid's environment holds entry (a whole
// "K=V" entry). A process that cannot be read (gone, another user's) has
// none.
func HasEnv(pid int, entry string) bool {
	if entry == "" {
		return false
	}
	env, err := Environ(pid)
	if err != nil {
		return false
	}
	for _, kv := range env {
		if kv == entry {
			return true
		}
	}
	return false
}

// CommandLine is process pid's argv joined by spaces, for a log ("" when
// it cannot be read).
func CommandLine(pid int) string {
	argv, err := Cmdline(pid)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.Join(argv, " "))
}

// splitNUL splits a block of NUL-terminated strings, dropping the empty
// tail.
func splitNUL(b []byte) []string {
	s := strings.TrimRight(string(b), "\x00")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}

func noProcess(pid int, err error) error {
	return fmt.Errorf("process %d: %w", pid, err)
}

func listFDs(dir string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil {
			fds = append(fds, fd)
		}
	}
	return fds, nil
}

// signalAfterLook sends sig to pid if the process there started at start
// (0: whatever runs there): a look, then a kill.
func signalAfterLook(pid int, start uint64, sig syscall.Signal) error {
	if p, ok := Stat(pid); !ok || (start != 0 && p.Start != start) {
		return syscall.ESRCH
	}
	return syscall.Kill(pid, sig)
}
