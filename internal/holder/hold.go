package holder

import (
	"bufio"
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
	"strings"
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

// Ready is a holder's answer to a start, one line on its stdout.
type Ready struct {
	PID        int    `json:"pid"`
	ProgramPID int    `json:"program_pid"`
	Error      string `json:"error,omitempty"`
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

// sconn is the daemon's connection; wmu orders its frames.
type sconn struct {
	c frameConn // out of the poller (takeBare) when the holder sends the output
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

// Request is one line on a holder's stdin: a pane to start, or a start to
// undo (the daemon could not connect to it).
type Request struct {
	Start *Config `json:"start,omitempty"`
	// End names the socket of a pane to end at once: its processes are
	// killed and nothing is kept for a daemon.
	End string `json:"end,omitempty"`
}

// Main runs a holder process. It reads Requests from stdin, one JSON
// object per line, starts each pane's program and answers each start with
// a Ready line on stdout, then serves every pane until a daemon has
// collected its program's exit status. The panes of one process share its
// runtime (a Go process costs megabytes however little it does);
// each keeps its own socket, secret, terminal and ring. The process ends
// when its last pane has ended (or with its first start, if that failed),
// or on SIGTERM, which ends every pane. Its memory is kept small: it holds
// rings and copies bytes.
func Main(stdin io.Reader, stdout io.Writer, stderr io.Writer) int {
	debug.SetGCPercent(50)
	// One processor: a holder copies bytes, and a second one only adds
	// threads woken to look for work at every frame.
	runtime.GOMAXPROCS(1)
	debug.SetMemoryLimit(16 << 20)
	// Caught, not ignored: an ignored signal stays ignored across exec,
	// and the program would not take Ctrl-C or a hangup. SIGPIPE caught
	// makes a write to a daemon gone an error, not the end of the holder.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP, syscall.SIGINT, syscall.SIGPIPE)
	logger := log.New(stderr, "corral hold: ", log.LstdFlags)
	// Orphans of the panes' processes come here, to be found and ended
	// with their pane.
	if err := procs.Subreaper(); err != nil {
		logger.Printf("%v", err)
	}
	g := &group{logf: logger.Printf, out: stdout, panes: map[string]*holder{}, over: make(chan struct{})}
	go g.reapOrphans()
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() {
		<-term
		g.endAll()
	}()
	go g.serveRequests(stdin)
	<-g.over
	// The last panes' ends (their exit to a daemon, their processes) are
	// done before the process goes.
	done := make(chan struct{})
	go func() { g.released.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(releaseWait):
		g.logf("ending with panes not yet let go")
	}
	return 0
}

// releaseWait bounds how long an ending holder waits for its last panes'
// ends: each ends its processes within about 7 s (SIGHUP, a second, then
// SIGKILL until none is left, at most 5 s, and the terminal's last
// output).
const releaseWait = 10 * time.Second

// group is the panes of one holder process.
type group struct {
	logf func(string, ...any)
	out  io.Writer // Ready lines; written by serveRequests only

	mu       sync.Mutex // guards what follows
	panes    map[string]*holder
	starting int  // starts under way
	started  bool // a start was tried: the process ends with its last pane
	eof      bool // stdin ended: no more starts
	ending   bool // SIGTERM, or the last pane ended: no more starts
	over     chan struct{}
	released sync.WaitGroup // a pane is counted until release
}

// MaxRequest bounds a request line on a holder's stdin.
const MaxRequest = 4 << 20

// serveRequests reads the daemon's requests until stdin ends. It never
// stops reading before that: a daemon writing a request must not wait on
// a holder that will not read it (a start that cannot be taken is
// answered, and the daemon starts it elsewhere).
func (g *group) serveRequests(stdin io.Reader) {
	rd := bufio.NewReaderSize(stdin, 64<<10)
	for {
		line, err := readLine(rd, MaxRequest)
		if errors.Is(err, errLongLine) {
			g.logf("request skipped: over %d bytes", MaxRequest)
			g.answer(Ready{PID: os.Getpid(), Error: fmt.Sprintf("the request is over %d bytes", MaxRequest)})
			continue
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				g.logf("requests: %v", err)
			}
			break
		}
		var req Request
		if err := json.Unmarshal(line, &req); err != nil {
			g.logf("request skipped: %v", err)
			g.answer(Ready{PID: os.Getpid(), Error: fmt.Sprintf("a request that is not one: %v", err)})
			continue
		}
		switch {
		case req.Start != nil:
			g.mu.Lock()
			if g.ending {
				g.mu.Unlock()
				g.answer(Ready{PID: os.Getpid(), Ending: true, Error: "this holder is ending"})
				continue
			}
			g.started = true
			g.starting++
			g.mu.Unlock()
			g.start(*req.Start)
		case req.End != "":
			g.mu.Lock()
			h := g.panes[filepath.Clean(req.End)]
			g.mu.Unlock()
			if h != nil {
				h.logf("ended: its daemon could not connect to it")
				h.endOnce.Do(func() { close(h.ending) })
				h.kill(syscall.SIGKILL)
				h.finishPane()
			}
		}
	}
	g.mu.Lock()
	g.eof = true
	g.checkOverLocked()
	g.mu.Unlock()
}

var errLongLine = errors.New("line too long")

// readLine reads one line without its newline. A line over max is read to
// its end and dropped (errLongLine): the next one is read whole.
func readLine(rd *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	long := false
	for {
		frag, err := rd.ReadSlice('\n')
		if !long {
			if len(line)+len(frag) > max+1 {
				long, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		switch {
		case err == nil:
			if long {
				return nil, errLongLine
			}
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0 && !long:
			return line, nil // a last line without its newline
		default:
			return nil, err
		}
	}
}

// answer writes one Ready line.
func (g *group) answer(r Ready) {
	b, _ := json.Marshal(r)
	if _, err := fmt.Fprintf(g.out, "%s\n", b); err != nil {
		g.logf("answer the daemon: %v", err)
	}
}

// start starts one pane and answers Ready. While it runs, the group
// cannot end: serveRequests holds it open.
func (g *group) start(cfg Config) {
	name := strings.TrimSuffix(filepath.Base(cfg.Socket), ".sock")
	logf := func(format string, args ...any) { g.logf("pane "+name+": "+format, args...) }
	g.released.Add(1)
	h, err := start(cfg, logf, g.remove, g.released.Done)
	r := Ready{PID: os.Getpid()}
	if err != nil {
		g.released.Done()
		r.Error = err.Error()
	} else {
		r.ProgramPID = h.pid
		g.mu.Lock()
		g.panes[filepath.Clean(cfg.Socket)] = h
		sigterm := g.ending
		g.mu.Unlock()
		if sigterm { // it came while every pane was being ended
			go h.end()
		}
	}
	g.answer(r)
	g.mu.Lock()
	g.starting--
	g.checkOverLocked()
	g.mu.Unlock()
}

// remove lets go of a pane that has ended: a daemon collected it, or it
// was ended.
func (g *group) remove(h *holder) {
	h.ln.Close()
	// The path is the pane's id: a pane started again (corral restore)
	// may listen there already.
	if fi, err := os.Stat(h.cfg.Socket); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Ino == h.sockIno {
			os.Remove(h.cfg.Socket)
		}
	}
	g.mu.Lock()
	if g.panes[filepath.Clean(h.cfg.Socket)] == h {
		delete(g.panes, filepath.Clean(h.cfg.Socket))
	}
	g.checkOverLocked()
	g.mu.Unlock()
}

// checkOverLocked ends the group once it has no pane left and none can
// come: a start was tried (the daemon starts another group rather than
// wait on an empty one), stdin ended, or SIGTERM.
func (g *group) checkOverLocked() {
	if len(g.panes) > 0 || g.starting > 0 || !(g.started || g.eof || g.ending) {
		return
	}
	select {
	case <-g.over:
	default:
		g.ending = true
		close(g.over)
	}
}

// endAll (SIGTERM: a shutdown of the machine, or a user) ends every pane
// and the holder with them: nobody is left to collect the exit statuses.
func (g *group) endAll() {
	g.mu.Lock()
	g.ending = true
	hs := make([]*holder, 0, len(g.panes))
	for _, h := range g.panes {
		hs = append(hs, h)
	}
	g.checkOverLocked()
	g.mu.Unlock()
	for _, h := range hs {
		h.logf("SIGTERM: ending the pane's processes")
		go h.end()
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

// reapOrphans reaps the adopted orphans that end, when a child ends
// (SIGCHLD) rather than on a timer: an idle holder costs nothing.
func (g *group) reapOrphans() {
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	defer signal.Stop(chld)
	t := time.NewTicker(30 * time.Second) // a missed signal, at worst
	defer t.Stop()
	for {
		select {
		case <-g.over:
			procs.Reap()
			return
		case <-chld:
		case <-t.C:
		}
		procs.Reap()
	}
}

func start(cfg Config, logf func(string, ...any), onFinish func(*holder), onRelease func()) (*holder, error) {
	if len(cfg.Argv) == 0 || cfg.Path == "" || cfg.Socket == "" || len(cfg.Secret) < 32 {
		return nil, errors.New("the holder's config lacks a program, a socket or a secret")
	}
	if cfg.Ring <= 0 {
		cfg.Ring = DefaultRing
	}
	_ = os.Remove(cfg.Socket) // ours: the folder is private and the id unique
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: cfg.Socket, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("holder socket: %w", err)
	}
	ln.SetUnlinkOnClose(false)
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
	h := &holder{cfg: cfg, ln: ln, pty: ptyFD, ring: ring, ringFD: ringFD, cmd: cmd, pid: cmd.Process.Pid, logf: logf,
		reaped: make(chan struct{}), first: make(chan struct{}), ending: make(chan struct{}),
		finished: make(chan struct{}), onFinish: onFinish, onRelease: onRelease, sockIno: sockIno}
	h.group = procs.Group{Root: h.pid, Mark: cfg.Mark}
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
	typ, b, err := readFrame(c, nil)
	if errors.Is(err, io.EOF) {
		c.Close() // a look at who listens (Listener), not a refused daemon
		return
	}
	if err != nil {
		refuse(err)
		return
	}
	if typ == tEnd {
		var m endMsg
		if len(b) > 0 && json.Unmarshal(b, &m) != nil {
			refuse(fmt.Errorf("%w: an end request that is not one", ErrFrame))
			return
		}
		h.endStray(c, m)
		return
	}
	var hi hello
	if err := decodeFrame(typ, b, tHello, &hi); err != nil {
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
	// A daemon that asks reads the terminal itself, into the shared ring;
	// one that does not (an older build) gets the output from the holder.
	shared := hi.Shared && h.ringFD >= 0
	var bc frameConn
	if shared {
		// Frames are rare both ways (requests; the exit): in the poller,
		// the connection costs no thread while it waits.
		_ = c.SetDeadline(time.Time{})
		bc = pollConn{c}
	} else if bc, err = takeBare(c); err != nil {
		refuse(err)
		return
	}
	sc := &sconn{c: bc, shared: shared}
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
	if h.released || h.stray {
		h.mu.Unlock()
		sc.wmu.Unlock()
		_ = writeFrame(bc, tError, []byte("the pane has ended"))
		bc.Close()
		return
	}
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
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) && !errors.Is(err, net.ErrClosed) {
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
				h.finishPane()
				return
			}
		default:
			h.logf("daemon connection: unknown frame type %q skipped", typ)
		}
	}
}

// endStray ends a pane on the word of a process of this user (checked by
// serve) that does not know its secret: a daemon that finds a holder
// socket its pane table does not name (the daemon that started the pane
// ended before noting it, so no daemon can adopt it). Ending needs no
// secret — the user can kill the processes anyway — but a pane a daemon
// holds is not ended this way.
func (h *holder) endStray(c *net.UnixConn, m endMsg) {
	defer c.Close()
	h.mu.Lock()
	held, runs := h.conn != nil, !h.waited
	if !held && !(m.OnlyExited && runs) {
		h.stray = true
	}
	h.mu.Unlock()
	switch {
	case held:
		_ = writeFrame(c, tError, []byte("a daemon holds this pane; end it through that daemon"))
		return
	case m.OnlyExited && runs:
		_ = writeFrame(c, tError, []byte(errStillRuns))
		return
	}
	h.logf("ended on request: no daemon can adopt it")
	_ = writeFrame(c, tEnded, nil)
	go h.end()
}

// welcome sends the welcome frame with fds attached: the PTY master, and
// the ring's memfd for a daemon that reads the terminal itself.
func (h *holder) welcome(c frameConn, w Welcome, fds []int) error {
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
	gone := h.exited || h.waited
	h.mu.Unlock()
	if gone {
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
