// Package proctest helps tests wait on conditions, skip what is slow under
// -short, run more at once, and read /proc for tests that check no process
// is left behind.
package proctest

import (
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// WaitFor polls cond until it holds (true) or d has passed (false: cond
// was false at the deadline too). It looks every 10 ms at first, then
// less often, every 50 ms at most: many conditions start a process (a
// corral command) to look, and a test suite's waits polling every 10 ms
// kept a 2-core machine busy starting them.
func WaitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	pause := 10 * time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(pause)
		pause = min(pause*3/2, 50*time.Millisecond)
	}
	return true
}

// stat returns the fields of /proc/PID/stat after "pid (comm)": the state
// letter first, then ppid, pgrp, …
func stat(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return nil
	}
	return strings.Fields(s[i+2:])
}

// Alive reports whether a process exists and is not a zombie.
func Alive(pid int) bool {
	f := stat(pid)
	return len(f) > 0 && f[0] != "Z"
}

// State returns a process's state letter (R, S, D, T, Z, …) and its
// parent's pid, or "" and 0 if there is no such process.
func State(pid int) (state string, ppid int) {
	f := stat(pid)
	if len(f) < 2 {
		return "", 0
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0], ppid
}

// Started returns when a process started (in clock ticks since boot), or
// "" if there is no such process. A pid and its start time name one
// process: pids are reused, within minutes where pid_max is 32768 and
// tests start thousands of processes.
func Started(pid int) string {
	if f := stat(pid); len(f) > 19 {
		return f[19]
	}
	return ""
}

// KillAtCleanup kills pid with SIGKILL when the test ends, if it is still
// the process it is now: a pid gone since may name another test's process
// (a test run starts hundreds of processes a second, and pid_max is 32768
// here: a pid comes round again within a minute).
func KillAtCleanup(t testing.TB, pid int) {
	if pid <= 0 {
		return
	}
	started := Started(pid)
	t.Cleanup(func() {
		if started != "" && Started(pid) == started {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// KillGroupAtCleanup kills process group pgid with SIGKILL when the test
// ends, if its leader is still the process it is now, or is gone while
// the group lives on (a pid stays in use while its group has members, so
// that group is still this one). Never 0: kill(-0) is the caller's own
// group.
func KillGroupAtCleanup(t testing.TB, pgid int) {
	if pgid <= 0 {
		return
	}
	started := Started(pgid)
	t.Cleanup(func() {
		if now := Started(pgid); now == started || now == "" {
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
	})
}

// PageMapped reports whether the page at addr is in process pid's page
// tables (/proc/PID/pagemap's present bit).
func PageMapped(t testing.TB, pid int, addr uintptr) bool {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [8]byte
	if _, err := f.ReadAt(b[:], int64(addr/uintptr(os.Getpagesize())*8)); err != nil {
		t.Fatal(err)
	}
	return binary.LittleEndian.Uint64(b[:])>>63 == 1
}

// GroupMembers counts the live (not zombie) processes in a process group.
func GroupMembers(pgid int) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := stat(pid); len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			n++
		}
	}
	return n
}

// Slow skips a test that takes seconds under -short, the inner loop
// (go test -short ./...); go test without -short, as CI runs it, runs it.
func Slow(t testing.TB, takes string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("takes %s; runs without -short", takes)
	}
}

// MoreParallel lets perCore tests per core run at once, for a package whose
// tests mostly wait on processes, sockets and timers, unless -parallel was
// given. A TestMain calls it before m.Run.
func MoreParallel(perCore int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(perCore*runtime.GOMAXPROCS(0)))
	}
}

// Case is a named test function, for Beside.
type Case struct {
	Name string
	Run  func(*testing.T)
}

// Beside runs the cases as t's subtests, all at once: called from a test
// that is not parallel itself, they run before the package's parallel
// tests and away from them, beside each other only (a package's TestApart).
func Beside(t *testing.T, cases ...Case) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			c.Run(t)
		})
	}
}
