package holder

// A holder process: its requests on stdin, and the panes it serves.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/procs"
)

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
	procs.StopMemProfile()
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
	g := &group{logf: logger.Printf, out: stdout, panes: map[string]*holder{}, over: make(chan struct{}), exits: newExitWatch()}
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
	// exits waits for the panes' programs: one SIGCHLD wait for all.
	exits *exitWatch

	mu       sync.Mutex // guards what follows
	panes    map[string]*holder
	starting int // starts under way
	// opening counts the starts under way at each socket path: a pane that
	// ends meanwhile leaves the path's file alone, which may already be the
	// new pane's (a socket made again at once can get the inode just freed).
	opening  map[string]int
	started  bool // a start was tried: the process ends with its last pane
	eof      bool // stdin ended: no more starts
	ending   bool // SIGTERM, or the last pane ended: no more starts
	over     chan struct{}
	released sync.WaitGroup // a pane is counted until release
	trim     *time.Timer    // gives the heap's free pages back once starts and ends pause
}

// trimAfter is how long after its last start or end a holder gives its
// heap's free pages back to the system. Its heap is mostly what the
// package initialisers and the starts left, then the panes' few kilobytes
// each; below the first collection's goal (GOGC 50: 2 MB), what was
// freed stays resident for the process's life, and an idle holder
// allocates nothing that would reuse it.
const trimAfter = 2 * time.Second

// trimProcess gives the heap's free pages back, and the binary's pages
// that the process's start touched (most of the binary: every package's
// initialisers run in a holder too); an idle holder runs little of it.
func trimProcess() {
	_, _ = procs.ReleaseCodePages() // a trim that fails costs memory, nothing else
	debug.FreeOSMemory()            // after: the collection frees what the release read with
}

// trimLater asks for a trim once the starts and ends pause.
func (g *group) trimLater() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.trim == nil {
		g.trim = time.AfterFunc(trimAfter, trimProcess)
		return
	}
	g.trim.Reset(trimAfter)
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
	path := filepath.Clean(cfg.Socket)
	g.mu.Lock()
	if g.opening == nil {
		g.opening = map[string]int{}
	}
	g.opening[path]++
	g.mu.Unlock()
	g.released.Add(1)
	h, err := start(cfg, logf, g.remove, g.released.Done, g.exits)
	r := Ready{PID: os.Getpid()}
	if err != nil {
		g.released.Done()
		r.Error = err.Error()
	} else {
		r.ProgramPID, r.ProgramStart = h.pid, h.group.Start
		g.mu.Lock()
		g.panes[path] = h
		sigterm := g.ending
		g.mu.Unlock()
		if sigterm { // it came while every pane was being ended
			go h.end()
		}
	}
	g.mu.Lock()
	if g.opening[path]--; g.opening[path] <= 0 {
		delete(g.opening, path)
	}
	g.mu.Unlock()
	g.answer(r)
	g.trimLater()
	g.mu.Lock()
	g.starting--
	g.checkOverLocked()
	g.mu.Unlock()
}

// remove lets go of a pane that has ended: a daemon collected it, or it
// was ended.
func (g *group) remove(h *holder) {
	h.ln.Close()
	path := filepath.Clean(h.cfg.Socket)
	g.trimLater()
	g.mu.Lock()
	// The path is the pane's id: a pane started again (corral restore, or
	// a start at once in this process) may listen there already. In this
	// process the lock orders the removal with its start; from another
	// process, the file is the old pane's if its inode is.
	if other, ok := g.panes[path]; (!ok || other == h) && g.opening[path] == 0 {
		if fi, err := os.Stat(path); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Ino == h.sockIno {
				os.Remove(path)
			}
		}
	}
	if g.panes[path] == h {
		delete(g.panes, path)
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
		// A look's copy of the process table is garbage that an idle
		// holder would keep as free pages for its life.
		g.trimLater()
		// Each look reads every process of the machine: the ends of many
		// panes at once (a shutdown) are reaped together, not one look
		// each. A SIGCHLD meanwhile waits in chld.
		select {
		case <-g.over:
		case <-time.After(holderReapGap):
		}
	}
}

// ReapGap is the least time between two looks for ended orphans.
const ReapGap = 100 * time.Millisecond

// holderReapGap is a holder's: nearly every child that ends in a holder is
// a pane's first process, which its pane waits for; the orphans a look is
// for are few, and a look at a thousand processes costs more than a
// zombie that stays a second.
const holderReapGap = time.Second
