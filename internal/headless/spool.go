package headless

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/osproc"
	"github.com/corral-dev/corral/internal/procs"
	"github.com/corral-dev/corral/internal/safefile"
)

// A held job's folder (STATE/jobs/ID) holds what lets it outlive its
// daemon: the job holder (the corral binary's hidden "jobhold" command, in
// a session of its own) runs the agent with its stdout and stderr written
// straight to files there, keeps its stdin, and writes its exit status
// there when it ends. Any daemon reads the files from the start, follows
// them, and talks to the holder on its socket.
const (
	SpoolSpec    = "spec.json"  // the daemon → the holder, read once and removed
	SpoolOut     = "out"        // the agent's stdout: its stream
	SpoolErr     = "err"        // the agent's stderr
	SpoolExit    = "exit.json"  // the exit status, written by the holder once all is over
	SpoolSocket  = "sock"       // the holder's socket: stdin and kill
	SpoolJournal = "journal"    // the events the daemons emitted, with where they came from
	SpoolLog     = "holder.log" // what the holder itself says
)

// HoldSpec is what the job holder runs.
type HoldSpec struct {
	Path string   `json:"path"` // the program, resolved
	Argv []string `json:"argv"`
	Dir  string   `json:"dir"`
	Env  []string `json:"env"` // its whole environment, the job's mark included
	Mark string   `json:"mark"`
	// Stdin keeps a pipe to the program's stdin (the relay); Opening is
	// written to it first, by the holder, so a daemon that dies at once
	// loses no prompt.
	Stdin   bool   `json:"stdin"`
	Opening []byte `json:"opening,omitempty"`
}

// HoldExit is the held program's end, as its holder saw it.
type HoldExit struct {
	Code int       `json:"code"`
	At   time.Time `json:"at"`
}

// holdMsg is one request to a job holder, a JSON line on its socket.
type holdMsg struct {
	In    []byte `json:"in,omitempty"`    // bytes for the program's stdin
	Close bool   `json:"close,omitempty"` // close its stdin
	Kill  int    `json:"kill,omitempty"`  // a signal for every process of the run
}

// HoldMain is the job holder: it runs the program of the job folder
// args[0] (its spec, written by the daemon), its output to the folder's
// files, and serves its stdin and kill on the folder's socket until the
// program and everything it left have ended; then it writes the exit
// status and exits. A child subreaper, it is where the run's orphans go.
func HoldMain(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "corral jobhold: the daemon starts it with a job's folder; it is not for users")
		return 2
	}
	dir := args[0]
	b, err := safefile.ReadOwned(filepath.Join(dir, SpoolSpec), 16<<20)
	if err != nil {
		fmt.Fprintf(stderr, "corral jobhold: %v\n", err)
		return 2
	}
	_ = os.Remove(filepath.Join(dir, SpoolSpec)) // the environment may hold secrets
	var spec HoldSpec
	if err := json.Unmarshal(b, &spec); err != nil || spec.Path == "" || len(spec.Argv) == 0 {
		fmt.Fprintf(stderr, "corral jobhold: %s: not a job's spec (%v)\n", SpoolSpec, err)
		return 2
	}
	_ = procs.Subreaper()
	// Caught, not ignored: an ignored signal would stay ignored in the run.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)

	open := func(name string) (*os.File, error) {
		return os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	}
	out, err := open(SpoolOut)
	if err != nil {
		fmt.Fprintf(stderr, "corral jobhold: %v\n", err)
		return 1
	}
	errf, err := open(SpoolErr)
	if err != nil {
		fmt.Fprintf(stderr, "corral jobhold: %v\n", err)
		return 1
	}
	sock := filepath.Join(dir, SpoolSocket)
	_ = os.Remove(sock)
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		fmt.Fprintf(stderr, "corral jobhold: socket: %v\n", err)
		return 1
	}
	cmd := exec.Command(spec.Path, spec.Argv[1:]...)
	cmd.Args[0] = spec.Argv[0]
	cmd.Dir, cmd.Env = spec.Dir, spec.Env
	cmd.Stdout, cmd.Stderr = out, errf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdin io.WriteCloser
	if spec.Stdin {
		if stdin, err = cmd.StdinPipe(); err != nil {
			fmt.Fprintf(stderr, "corral jobhold: %v\n", err)
			return 1
		}
	}
	startErr := cmd.Start()
	out.Close()
	errf.Close()
	r := HoldReady{PID: os.Getpid()}
	var group procs.Group
	if startErr != nil {
		r.Error = fmt.Sprintf("start %s: %v", spec.Argv[0], startErr)
	} else {
		group = procs.NewGroup(cmd.Process.Pid, spec.Mark) // not waited for yet: the pid is its own
		r.ProgramPID, r.ProgramStart = group.Root, group.Start
	}
	rb, _ := json.Marshal(r)
	_, _ = stdout.Write(append(rb, '\n'))
	if c, ok := stdout.(io.Closer); ok {
		c.Close() // the daemon reads to the end
	}
	if startErr != nil {
		ln.Close()
		os.Remove(sock)
		return 127
	}
	h := &jobHolder{pid: cmd.Process.Pid, group: group, conns: map[net.Conn]bool{}}
	// Written from a goroutine of its own: an agent that does not read its
	// stdin must not hold the holder's requests (a kill among them).
	h.write, h.closeIn = stdinWriter(stdin)
	if len(spec.Opening) > 0 {
		h.write(spec.Opening)
	}
	go h.serve(ln)
	code := h.wait()
	// The run is over, all of it: its status goes where any daemon finds it.
	eb, _ := json.Marshal(HoldExit{Code: code, At: time.Now()})
	if err := safefile.WriteAtomic(filepath.Join(dir, SpoolExit), eb, 0o600); err != nil {
		fmt.Fprintf(stderr, "corral jobhold: %v\n", err)
	}
	ln.Close()
	os.Remove(sock)
	h.closeConns() // a daemon connected learns the end from the hang-up
	return 0
}

// HoldReady is a job holder's first line on its stdout.
type HoldReady struct {
	PID        int `json:"pid"`
	ProgramPID int `json:"program_pid"`
	// ProgramStart is the program's start time (procs.Group.Start).
	ProgramStart uint64 `json:"program_start,omitempty"`
	Error        string `json:"error,omitempty"`
}

type jobHolder struct {
	pid     int
	group   procs.Group
	write   func([]byte) // queues bytes for the program's stdin
	closeIn func()       // closes it once what is queued is written
	mu      sync.Mutex   // guards what follows
	conns   map[net.Conn]bool
	ended   bool // the program has exited: its pid may be another's
	closed  bool // the exit status is written: connections are hung up
}

// serve takes requests from daemons of this user.
func (h *jobHolder) serve(ln *net.UnixListener) {
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		if !sameUser(c) {
			c.Close()
			continue
		}
		// Taken even once the run has ended: a daemon learns the end from
		// the hang-up, which comes after the exit status is written.
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			c.Close()
			continue
		}
		h.conns[c] = true
		h.mu.Unlock()
		go h.handle(c)
	}
}

func (h *jobHolder) handle(c net.Conn) {
	defer func() {
		h.mu.Lock()
		delete(h.conns, c)
		h.mu.Unlock()
		c.Close()
	}()
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var m holdMsg
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			return
		}
		switch {
		case len(m.In) > 0:
			h.write(m.In)
		case m.Close:
			h.closeIn()
		case m.Kill > 0:
			h.kill(syscall.Signal(m.Kill))
		}
	}
}

func (h *jobHolder) kill(sig syscall.Signal) {
	h.mu.Lock()
	ended := h.ended
	h.mu.Unlock()
	if ended {
		return
	}
	// wait may have collected its status since: SignalGroup checks the
	// process at its pid is still the program.
	_ = h.group.SignalGroup(sig)
	h.group.Signal(sig)
}

func (h *jobHolder) closeConns() {
	h.mu.Lock()
	h.closed = true
	for c := range h.conns {
		c.Close()
	}
	h.mu.Unlock()
}

// wait reaps every child until the program has exited, then ends what it
// left (it must not write to the job's files after its end is told) and
// returns the program's status (128+N for a signal N).
func (h *jobHolder) wait() int {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return -1
		}
		if pid != h.pid {
			continue
		}
		h.mu.Lock()
		h.ended = true // its pid may be another's from here
		h.mu.Unlock()
		// Collected just now, the pid is still held by its group's
		// members, if any (a pid stays in use while a group or session
		// has it for id): a group of that id is the program's. (The
		// group's own SignalGroup sends nothing once its root is gone.)
		_ = syscall.Kill(-h.pid, syscall.SIGKILL)
		h.group.KillAll(5 * time.Second)
		h.closeIn()
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

// sameUser reports whether the peer of c runs as this user.
func sameUser(c *net.UnixConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	_ = raw.Control(func(fd uintptr) {
		uid, _, err := osproc.PeerCred(int(fd))
		ok = err == nil && uid == os.Getuid()
	})
	return ok
}
