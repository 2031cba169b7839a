package procs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// GuardFD is the guard's lifeline: the read end of a pipe whose write end
// only the daemon holds.
const GuardFD = 3

// GuardGrace is how long a guard whose daemon ended waits, after SIGTERM,
// before it kills what is left of the run.
const GuardGrace = time.Second

// GuardMain is the process that stands between the daemon and a headless
// run: the run is its child, in its process group, with the daemon's pipes
// as its standard streams (passed on as they are, never copied). While the
// daemon lives the guard only waits, and exits as the run exited. When the
// daemon ends, however it ends (kill -9 included), the lifeline reads end
// of file and the guard ends the run and everything it started (a child
// subreaper, it is where the run's orphans go), so a run never outlives
// its daemon unseen, and a fleet retry never runs it twice.
//
// args are the program's path, then its argv (argv[0] as the caller gave
// it). What the guard says goes to stderr, which is the run's.
func GuardMain(args []string, stderr io.Writer) int {
	if len(args) < 2 {
		fmt.Fprintln(stderr, "corral guard: the daemon starts it with a program's path and argv; it is not for users")
		return 2
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(GuardFD, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		fmt.Fprintf(stderr, "corral guard: fd %d is not the daemon's lifeline pipe\n", GuardFD)
		return 2
	}
	syscall.CloseOnExec(GuardFD)
	lifeline := os.NewFile(GuardFD, "lifeline")
	_ = Subreaper()
	// Caught, not ignored: an ignored signal would stay ignored in the run.
	// The daemon signals the whole group, the run included.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)

	cmd := exec.Command(args[0], args[2:]...)
	cmd.Args[0] = args[1]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "corral: start %s: %v\n", args[1], err)
		return 127
	}
	mark := ""
	for _, kv := range os.Environ() {
		if len(kv) > len(jobMarkKey) && kv[:len(jobMarkKey)] == jobMarkKey {
			mark = kv
		}
	}
	runPID := cmd.Process.Pid
	// ending: the daemon is gone and the run is being ended; the guard
	// exits once all of it is (endAll), not when the run's first process
	// goes.
	var ending sync.Once
	endAll := func() {
		// The daemon is gone: nobody reads the run's output or answers it.
		self := Group{Root: os.Getpid(), Mark: mark}
		self.Signal(syscall.SIGTERM)
		deadline := time.Now().Add(GuardGrace)
		for time.Now().Before(deadline) && len(self.Descendants()) > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		self.KillAll(5 * time.Second)
		os.Exit(137)
	}
	go func() {
		var b [1]byte
		for {
			if _, err := lifeline.Read(b[:]); err != nil {
				break
			}
		}
		ending.Do(endAll)
	}()
	// Reap every child (orphans of the run come here); the run's own
	// status is the guard's.
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			// No child left to wait for (ECHILD): what the run left goes
			// too if its daemon is gone.
			if daemonGone(lifeline) {
				ending.Do(endAll)
			}
			fmt.Fprintf(stderr, "corral guard: wait: %v\n", err)
			return 1
		}
		if pid != runPID {
			continue
		}
		// The run's first process ended; with its daemon gone too (it
		// may have died of that), what it left is ended here.
		if daemonGone(lifeline) {
			ending.Do(endAll)
		}
		switch {
		case ws.Exited():
			return ws.ExitStatus()
		case ws.Signaled():
			sig := ws.Signal()
			signal.Reset(sig)
			_ = syscall.Kill(os.Getpid(), sig)
			time.Sleep(100 * time.Millisecond)
			return 128 + int(sig)
		}
	}
}

// daemonGone reports whether the lifeline's write end is closed.
func daemonGone(lifeline *os.File) bool {
	fds := []unix.PollFd{{Fd: int32(lifeline.Fd()), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&(unix.POLLHUP|unix.POLLIN) != 0
}

// jobMarkKey begins the environment entry that marks a headless run's
// processes ("CORRAL_JOB=ID").
const jobMarkKey = "CORRAL_JOB="
