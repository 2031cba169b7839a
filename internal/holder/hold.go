package holder

import (
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/procs"
	"github.com/corral-dev/corral/internal/rawio"
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

// Ready is the holder's first and only line on its stdout.
type Ready struct {
	PID        int    `json:"pid"`
	ProgramPID int    `json:"program_pid"`
	Error      string `json:"error,omitempty"`
}

// DrainWait bounds how long the end of a program's output is read after
// every process of its pane has been ended.
const DrainWait = time.Second

// StartWait bounds how long a new holder's program waits for the first
// daemon before its output is read into the ring all the same.
const StartWait = 10 * time.Second

// handshakeWait bounds a connection's proofs.
const handshakeWait = 5 * time.Second

type holder struct {
	cfg Config
	ln  *net.UnixListener
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
	firstOnce sync.Once
	finished  chan struct{} // a daemon collected the exit status
	finish    sync.Once

	mu      sync.Mutex // guards what follows
	conn    *sconn
	reader  *reader // the holder's own reading of the terminal, if any
	ptyGone bool    // the terminal has ended: nothing more to read
	exited  bool
	code    int
}

// sconn is the daemon's connection; wmu orders its frames.
type sconn struct {
	c *rawio.FD // out of the poller (takeBare)
	// shared: the daemon reads the terminal itself, into the shared
	// ring; no output goes over the connection.
	shared bool
	wmu    sync.Mutex
	buf    []byte // a frame being written; guarded by wmu
}

// reader is the holder reading the terminal itself, through a duplicate
// in the poller that exists only while it reads.
type reader struct {
	f    *os.File
	stop atomic.Bool
	done chan struct{}
}

// Main runs a holder: it reads its Config from stdin, starts the program,
// reports Ready on stdout, and serves until a daemon has collected the
// program's exit status. Its memory is kept small: it holds a ring and
// copies bytes.
func Main(stdin io.Reader, stdout io.Writer, stderr io.Writer) int {
	debug.SetGCPercent(50)
	// One processor: a holder copies bytes, and a second one only adds
	// threads woken to look for work at every frame.
	runtime.GOMAXPROCS(1)
	debug.SetMemoryLimit(16 << 20)
	// Caught, not ignored: an ignored signal stays ignored across exec,
	// and the program would not take Ctrl-C or a hangup.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP, syscall.SIGINT)
	logger := log.New(stderr, "corral hold: ", log.LstdFlags)
	var cfg Config
	fail := func(err error) int {
		b, _ := json.Marshal(Ready{PID: os.Getpid(), Error: err.Error()})
		fmt.Fprintf(stdout, "%s\n", b)
		return 1
	}
	if err := json.NewDecoder(io.LimitReader(stdin, 4<<20)).Decode(&cfg); err != nil {
		return fail(fmt.Errorf("read the holder's config: %w", err))
	}
	h, err := start(cfg, logger.Printf)
	if err != nil {
		return fail(err)
	}
	b, _ := json.Marshal(Ready{PID: os.Getpid(), ProgramPID: h.pid})
	fmt.Fprintf(stdout, "%s\n", b)
	if c, ok := stdout.(io.Closer); ok {
		c.Close()
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() {
		// SIGTERM (a shutdown of the machine, or a user) ends the pane and
		// the holder with it: nobody is left to collect the exit status.
		<-term
		h.logf("SIGTERM: ending the pane's processes")
		h.kill(syscall.SIGHUP)
		select {
		case <-h.reaped:
		case <-time.After(time.Second):
			h.kill(syscall.SIGKILL)
			<-h.reaped
		}
		h.finish.Do(func() { close(h.finished) })
	}()
	<-h.finished
	h.ln.Close()
	os.Remove(cfg.Socket)
	return 0
}

func start(cfg Config, logf func(string, ...any)) (*holder, error) {
	if len(cfg.Argv) == 0 || cfg.Path == "" || cfg.Socket == "" || len(cfg.Secret) < 32 {
		return nil, errors.New("the holder's config lacks a program, a socket or a secret")
	}
	if cfg.Ring <= 0 {
		cfg.Ring = DefaultRing
	}
	// Orphans of the pane's processes come here, to be found and ended
	// with the pane.
	if err := procs.Subreaper(); err != nil {
		logf("%v", err)
	}
	_ = os.Remove(cfg.Socket) // ours: the folder is private and the id unique
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: cfg.Socket, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("holder socket: %w", err)
	}
	ln.SetUnlinkOnClose(false)
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
		ln.Close()
		os.Remove(cfg.Socket)
		return nil, err
	}
	h := &holder{cfg: cfg, ln: ln, pty: ptyFD, ring: ring, ringFD: ringFD, cmd: cmd, pid: cmd.Process.Pid, logf: logf,
		reaped: make(chan struct{}), first: make(chan struct{}), finished: make(chan struct{})}
	h.group = procs.Group{Root: h.pid, Mark: cfg.Mark}
	go h.reapOrphans()
	go h.readWithoutDaemon()
	go h.reap()
	go h.acceptLoop()
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

// reapOrphans reaps the adopted orphans that end, when a child ends
// (SIGCHLD) rather than on a timer: an idle holder costs nothing.
func (h *holder) reapOrphans() {
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	defer signal.Stop(chld)
	t := time.NewTicker(30 * time.Second) // a missed signal, at worst
	defer t.Stop()
	for {
		select {
		case <-h.finished:
			procs.Reap()
			return
		case <-chld:
		case <-t.C:
		}
		procs.Reap()
	}
}

// readWithoutDaemon starts the holder's own reading if no daemon came
// within StartWait. Nothing is read before: the program's first output
// waits in the terminal rather than fall out of the ring.
func (h *holder) readWithoutDaemon() {
	select {
	case <-h.first:
	case <-time.After(StartWait):
		h.mu.Lock()
		if h.conn == nil {
			h.startReadingLocked()
		}
		h.mu.Unlock()
	}
}

// startReadingLocked starts the holder's own reading of the terminal, into
// the ring and to a daemon that does not read it itself.
func (h *holder) startReadingLocked() {
	if h.reader != nil || h.ptyGone {
		return
	}
	fd, err := unix.FcntlInt(uintptr(h.pty), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		h.logf("read the terminal: %v", err)
		return
	}
	rd := &reader{f: os.NewFile(uintptr(fd), "/dev/ptmx"), done: make(chan struct{})}
	rc, err := rd.f.SyscallConn()
	if err != nil {
		rd.f.Close()
		h.logf("read the terminal: %v", err)
		return
	}
	h.reader = rd
	go func() {
		hungUp := rawio.ReadTerminal(rc, &rd.stop, func(b []byte) {
			h.mu.Lock()
			h.ring.Append(b)
			sc := h.conn
			h.mu.Unlock()
			if sc != nil && !sc.shared {
				h.send(sc, tOutput, b)
			}
		})
		h.mu.Lock()
		if hungUp {
			h.ptyGone = true // every process of the pane has let go
		} else if !rd.stop.Load() {
			h.logf("reading the terminal stopped; the next daemon reads it")
		}
		if h.reader == rd {
			h.reader = nil
		}
		h.mu.Unlock()
		rd.f.Close() // out of the poller
		close(rd.done)
	}()
}

// end stops a reader and waits until it has: every byte it read is in
// the ring.
func (rd *reader) end() {
	rd.stop.Store(true)
	_ = rd.f.SetReadDeadline(time.Now()) // ends its wait in the poller
	<-rd.done
}

// send writes one frame to the daemon; a connection that fails is dropped
// (the next daemon gets the ring).
func (h *holder) send(sc *sconn, typ byte, b []byte) {
	sc.wmu.Lock()
	sc.buf = appendFrame(sc.buf[:0], typ, b)
	_, err := sc.c.Write(sc.buf)
	if cap(sc.buf) > 64<<10 {
		sc.buf = nil // a big frame's buffer is not kept
	}
	sc.wmu.Unlock()
	if err != nil {
		h.drop(sc)
	}
}

// drop ends a daemon's connection. If it read the terminal itself, it no
// longer does (it let go, or it is gone): the holder reads on.
func (h *holder) drop(sc *sconn) {
	h.mu.Lock()
	if h.conn == sc {
		h.conn = nil
		if sc.shared {
			h.startReadingLocked()
		}
	}
	h.mu.Unlock()
	sc.c.Close()
}

// reap waits for the program, ends every process it left, and keeps its
// exit status for a daemon.
func (h *holder) reap() {
	procs.WaitExit(h.pid)
	killGroup(h.pid, syscall.SIGHUP)
	h.group.Signal(syscall.SIGHUP)
	killGroup(h.pid, syscall.SIGKILL)
	h.group.KillAll(5 * time.Second)
	err := h.cmd.Wait()
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
	close(h.reaped)
	if sc != nil {
		b, _ := json.Marshal(exitMsg{Code: code})
		h.send(sc, tExit, b)
	}
}

func (h *holder) acceptLoop() {
	for {
		c, err := h.ln.AcceptUnix()
		if err != nil {
			select {
			case <-h.finished:
				return
			default:
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			h.logf("accept: %v", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		go h.serve(c)
	}
}

// serve proves the daemon, hands it the terminal and the ring, and takes
// its requests until it goes.
func (h *holder) serve(c *net.UnixConn) {
	_ = c.SetDeadline(time.Now().Add(handshakeWait))
	refuse := func(err error) {
		h.logf("refused a connection: %v", err)
		_ = writeFrame(c, tError, []byte(err.Error()))
		c.Close()
	}
	if _, err := checkPeer(c); err != nil {
		refuse(err)
		return
	}
	var hi hello
	if err := readJSON(c, tHello, &hi); err != nil {
		refuse(err)
		return
	}
	if hi.Version != Version {
		refuse(fmt.Errorf("protocol version %d; this holder speaks %d", hi.Version, Version))
		return
	}
	nonce := newNonce()
	if err := writeJSON(c, tChallenge, challenge{Version: Version, Proof: proof(h.cfg.Secret, "holder", hi.Nonce), Nonce: nonce}); err != nil {
		c.Close()
		return
	}
	var a auth
	if err := readJSON(c, tAuth, &a); err != nil {
		refuse(err)
		return
	}
	if subtle.ConstantTimeCompare([]byte(a.Proof), []byte(proof(h.cfg.Secret, "daemon", nonce))) != 1 {
		refuse(errors.New("wrong secret: this pane belongs to another daemon"))
		return
	}
	bc, err := takeBare(c)
	if err != nil {
		refuse(err)
		return
	}
	// A daemon that asks reads the terminal itself, into the shared ring;
	// one that does not (an older build) gets the output from the holder.
	sc := &sconn{c: bc, shared: hi.Shared && h.ringFD >= 0}
	if !sc.shared {
		// The program has ended and the holder is reading the end of its
		// output: that end goes before the exit, in the replay.
		h.mu.Lock()
		rd, exited := h.reader, h.exited
		h.mu.Unlock()
		if rd != nil && exited {
			select {
			case <-rd.done:
			case <-time.After(DrainWait):
			}
		}
	}
	sc.wmu.Lock()
	h.mu.Lock()
	old := h.conn
	h.conn = sc
	var replay []byte
	var rd *reader
	if sc.shared {
		rd, h.reader = h.reader, nil
	} else {
		replay = h.ring.Bytes()
		h.startReadingLocked() // what it reads from now on goes live, after the replay
	}
	exited, code := h.exited, h.code
	h.mu.Unlock()
	if old != nil {
		old.c.Close() // a newer daemon takes over
	}
	fds := []int{h.pty}
	w := Welcome{HolderPID: os.Getpid(), ProgramPID: h.pid, Exited: exited, ExitCode: code, Ring: len(replay)}
	if sc.shared {
		if rd != nil {
			rd.end() // every byte it read is in the ring before the daemon reads on
		}
		fds = append(fds, h.ringFD)
		w.Shared = true
	}
	err = h.welcome(bc, w, fds)
	for len(replay) > 0 && err == nil {
		n := min(len(replay), 64<<10)
		err = writeFrame(bc, tOutput, replay[:n])
		replay = replay[n:]
	}
	if err == nil {
		err = writeFrame(bc, tLive, nil)
	}
	if err == nil && exited {
		b, _ := json.Marshal(exitMsg{Code: code})
		err = writeFrame(bc, tExit, b)
	}
	sc.wmu.Unlock()
	if err != nil {
		h.drop(sc)
		return
	}
	h.firstOnce.Do(func() { close(h.first) })
	buf := make([]byte, 256)
	for {
		typ, b, err := readFrame(bc, buf)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				h.logf("daemon connection: %v", err)
			}
			h.drop(sc)
			return
		}
		switch typ {
		case tKill:
			var k killMsg
			if json.Unmarshal(b, &k) == nil && k.Signal > 0 && k.Signal < 65 {
				h.kill(syscall.Signal(k.Signal))
			}
		case tDone:
			h.mu.Lock()
			done := h.exited && h.conn == sc
			h.mu.Unlock()
			if done {
				h.finish.Do(func() { close(h.finished) })
				return
			}
		default:
			h.logf("daemon connection: unknown frame type %q skipped", typ)
		}
	}
}

// welcome sends the welcome frame with fds attached: the PTY master, and
// the ring's memfd for a daemon that reads the terminal itself.
func (h *holder) welcome(c *rawio.FD, w Welcome, fds []int) error {
	b, _ := json.Marshal(w)
	frame := make([]byte, 5+len(b))
	frame[0] = tWelcome
	binary.BigEndian.PutUint32(frame[1:5], uint32(len(b)))
	copy(frame[5:], b)
	_, err := c.WriteRights(frame, unix.UnixRights(fds...))
	return err
}

// kill signals every process of the pane (and wakes a stopped group so
// the signal lands).
func (h *holder) kill(sig syscall.Signal) {
	h.mu.Lock()
	exited := h.exited
	h.mu.Unlock()
	if exited {
		return
	}
	h.group.Signal(sig)
	killGroup(h.pid, sig)
	if sig != syscall.SIGKILL && sig != syscall.SIGSTOP && sig != syscall.SIGTSTP && sig != syscall.SIGCONT {
		killGroup(h.pid, syscall.SIGCONT)
	}
}

func killGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
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
