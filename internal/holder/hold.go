package holder

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/procs"
)

// Config is what a holder is started with (as JSON on its stdin).
type Config struct {
	Socket string   `json:"socket"`
	Secret string   `json:"secret"`
	Path   string   `json:"path"` // the program, resolved
	Argv   []string `json:"argv"`
	Dir    string   `json:"dir"`
	Env    []string `json:"env"` // the program's whole environment
	Cols   int      `json:"cols"`
	Rows   int      `json:"rows"`
	// Mark finds the pane's processes that left its session
	// ("CORRAL_PANE=ID").
	Mark string `json:"mark"`
	// Ring bounds the output kept for the next daemon (DefaultRing when 0).
	Ring int `json:"ring"`
}

// DefaultRing is the output a holder keeps: enough for a full-screen
// program's last redraws.
const DefaultRing = 256 << 10

// Ready is a holder's answer to a start, one line on its stdout.
type Ready struct {
	PID        int `json:"pid"`
	ProgramPID int `json:"program_pid"`
	// ProgramStart is the program's start time (procs.Group.Start): with
	// its pid it names the program, whose pid may be another's later.
	ProgramStart uint64 `json:"program_start,omitempty"`
	Error        string `json:"error,omitempty"`
	// Ending: the holder process is ending and took nothing; another one
	// takes the pane.
	Ending bool `json:"ending,omitempty"`
}

// DrainWait bounds how long the end of a program's output is read after
// every process of its pane has been ended.
const DrainWait = time.Second

// StartWait bounds how long a new holder's program waits for the first
// daemon before its output is read into the ring all the same.
const StartWait = 10 * time.Second

type holder struct {
	cfg Config
	ln  *watched // the pane's socket, listening
	// pty is the PTY master, bare: out of the poller, so that while a
	// daemon reads the terminal the holder is never woken by its output.
	// The holder reads it through a reader of its own only while no
	// daemon does.
	pty    int
	ring   *Ring // shared with daemons that read the terminal themselves
	ringFD int
	cmd    *exec.Cmd
	pid    int
	group  procs.Group
	logf   func(string, ...any)

	reaped    chan struct{} // the program's exit status is known
	first     chan struct{} // the first daemon is in
	ending    chan struct{} // the pane is being ended (end): no daemon is waited for
	endOnce   sync.Once
	firstOnce sync.Once
	finished  chan struct{} // a daemon collected the exit status, or the pane was ended
	finish    sync.Once
	onFinish  func(*holder) // once finished
	onRelease func()        // once released
	sockIno   uint64        // the socket file's inode: the path may be a newer pane's later
	over      atomic.Int32  // finished and reaped: at 2, release

	mu      sync.Mutex // guards what follows
	conn    *sconn
	reader  *reader // the holder's own reading of the terminal, if any
	ptyGone bool    // the terminal has ended: nothing more to read
	// released: the pane is over and its terminal, ring and connection
	// closed (release).
	released bool
	exited   bool
	code     int
	waited   bool // the program's exit status is collected (its pid is free)
	stray    bool // ended as a stray: no daemon may connect any more
}

// start starts a pane's program; exits waits for its end (nil: a wait of
// its own).
func start(cfg Config, logf func(string, ...any), onFinish func(*holder), onRelease func(), exits *exitWatch) (*holder, error) {
	if len(cfg.Argv) == 0 || cfg.Path == "" || cfg.Socket == "" || len(cfg.Secret) < 32 {
		return nil, errors.New("the holder's config lacks a program, a socket or a secret")
	}
	if cfg.Ring <= 0 {
		cfg.Ring = DefaultRing
	}
	_ = os.Remove(cfg.Socket) // ours: the folder is private and the id unique
	ln, err := listen(cfg.Socket)
	if err != nil {
		return nil, fmt.Errorf("holder socket: %w", err)
	}
	var sockIno uint64
	if fi, err := os.Stat(cfg.Socket); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			sockIno = st.Ino
		}
	}
	cmd := exec.Command(cfg.Path, cfg.Argv[1:]...)
	cmd.Args[0] = cfg.Argv[0]
	cmd.Dir = cfg.Dir
	cmd.Env = cfg.Env
	var ptmx *os.File
	_, err = procs.Spawn(func() (int, error) {
		var err error
		ptmx, err = pty.StartWithAttrs(cmd, &pty.Winsize{Cols: uint16(cfg.Cols), Rows: uint16(cfg.Rows)},
			&syscall.SysProcAttr{Setsid: true, Setctty: true})
		if err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	if err != nil {
		ln.Close()
		os.Remove(cfg.Socket)
		return nil, fmt.Errorf("start %s: %w", cfg.Argv[0], err)
	}
	ptyFD, err := bareNonBlocking(ptmx)
	var ring *Ring
	ringFD := -1
	if err == nil {
		ring, ringFD, err = NewRing(cfg.Ring)
		if err != nil {
			unix.Close(ptyFD)
		}
	}
	if err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		procs.Release(cmd.Process.Pid)
		ln.Close()
		os.Remove(cfg.Socket)
		return nil, err
	}
	// The program's environment and arguments are not needed once it
	// runs: a pane's whole environment is kilobytes, for as long as it
	// lives.
	cfg.Env, cfg.Argv = nil, nil
	cmd.Env, cmd.Args = nil, nil
	h := &holder{cfg: cfg, ln: ln, pty: ptyFD, ring: ring, ringFD: ringFD, cmd: cmd, pid: cmd.Process.Pid, logf: logf,
		reaped: make(chan struct{}), first: make(chan struct{}), ending: make(chan struct{}),
		finished: make(chan struct{}), onFinish: onFinish, onRelease: onRelease, sockIno: sockIno}
	h.group = procs.NewGroup(h.pid, cfg.Mark) // not waited for yet: the pid is its own
	go h.readWithoutDaemon()
	if exits != nil {
		exits.add(h.pid, h.reapExited)
	} else {
		go h.reap()
	}
	h.watchAccept()
	return h, nil
}

// bareNonBlocking replaces a PTY master with a bare non-blocking,
// close-on-exec duplicate.
func bareNonBlocking(m *os.File) (int, error) {
	fd, err := unix.FcntlInt(m.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	m.Close()
	if err != nil {
		return -1, fmt.Errorf("dup pty: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("pty non-blocking: %w", err)
	}
	return fd, nil
}

// reap waits for the program, then reapExited.
func (h *holder) reap() {
	procs.WaitExit(h.pid)
	h.reapExited()
}

// reapExited, once the program has exited, ends every process it left,
// collects its exit status and keeps it for a daemon.
func (h *holder) reapExited() {
	_ = h.group.SignalGroup(syscall.SIGHUP)
	_ = h.group.SignalGroup(syscall.SIGKILL)
	sweeps.hangUpAndKill(h.group, 5*time.Second)
	err := h.cmd.Wait()
	h.mu.Lock()
	h.waited = true // its pid may be another's from here: never signalled again
	h.mu.Unlock()
	procs.Release(h.pid)
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		} else {
			code = -1
		}
	}
	select { // nothing reads the terminal before the first daemon
	case <-h.first:
	case <-h.ending:
	case <-time.After(StartWait):
	}
	// The end of the output: the holder's own reading ends at the
	// terminal's hang-up. (A daemon that reads it waits for the same.)
	h.mu.Lock()
	rd := h.reader
	h.mu.Unlock()
	if rd != nil {
		select {
		case <-rd.done:
		case <-time.After(DrainWait):
			rd.end()
		}
	}
	h.mu.Lock()
	h.exited, h.code = true, code
	sc := h.conn
	h.mu.Unlock()
	if sc != nil {
		b, _ := json.Marshal(exitMsg{Code: code})
		h.send(sc, tExit, b)
	}
	close(h.reaped) // after the exit is sent: an end waiting for this then lets the pane go
	if h.over.Add(1) == 2 {
		h.release()
	}
}

// kill signals every process of the pane (and wakes a stopped group so
// the signal lands).
func (h *holder) kill(sig syscall.Signal) {
	h.mu.Lock()
	gone := h.exited || h.waited
	h.mu.Unlock()
	if gone {
		return
	}
	widen.signalled()
	sweeps.signal(h.group, sig)
	// Its status may be collected since the look above, and its pid
	// another's: SignalGroup checks the process at it is still the program.
	_ = h.group.SignalGroup(sig)
	if sig != syscall.SIGKILL && sig != syscall.SIGSTOP && sig != syscall.SIGTSTP && sig != syscall.SIGCONT {
		_ = h.group.SignalGroup(syscall.SIGCONT)
	}
}

// finishPane marks the pane finished and lets its group know.
func (h *holder) finishPane() {
	h.finish.Do(func() {
		close(h.finished)
		if h.onFinish != nil {
			h.onFinish(h)
		}
		if h.over.Add(1) == 2 {
			h.release()
		}
	})
}

// release closes what the pane held, once it is both finished and reaped
// (whichever comes second): the process may serve other panes long after.
func (h *holder) release() {
	h.mu.Lock()
	rd, sc := h.reader, h.conn
	h.reader, h.conn = nil, nil
	h.ptyGone, h.released = true, true // nothing reads the terminal again
	h.mu.Unlock()
	if rd != nil {
		rd.end()
	}
	if sc != nil {
		sc.c.Close()
	}
	h.mu.Lock()
	h.ring.Close()
	h.mu.Unlock()
	if h.ringFD >= 0 {
		unix.Close(h.ringFD)
	}
	unix.Close(h.pty)
	if h.onRelease != nil {
		h.onRelease()
	}
}

// end ends the pane's processes (SIGHUP, then SIGKILL) and the pane.
func (h *holder) end() {
	h.endOnce.Do(func() { close(h.ending) })
	h.kill(syscall.SIGHUP)
	select {
	case <-h.reaped:
	case <-time.After(time.Second):
		h.kill(syscall.SIGKILL)
		<-h.reaped
	}
	h.finishPane()
}

// SocketDir returns (making it, mode 0700) the folder of holder sockets
// in stateDir, refusing one that is not a private folder of ours.
func SocketDir(stateDir string) (string, error) {
	dir := filepath.Join(stateDir, "holders")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("holder sockets: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("holder sockets: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("holder sockets: %s must be a folder of yours that only you can open (mode 0700); remove it and try again", dir)
	}
	return dir, nil
}
