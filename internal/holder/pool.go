package holder

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/procs"
)

// GroupSize is how many panes one holder process takes. The process's own
// cost (the Go runtime and what the binary's packages keep: about 3.5 MB
// of its own memory, and its share of the binary's pages) is shared by
// that many panes, and since a pane waits in the holder's poller (a few
// kilobytes a pane, no goroutine) it is most of what the holders cost: at
// 1,000 panes 512 a process cost 61–64 KB a pane in all against 70–71 KB
// with 256 (docs/benchmarks.md). Not more: one holder of 1,000 panes saved
// up to 5 KB a pane more, but started each pane slower and, in a run under
// load, took 31 s to end them (two of 512: at most 2.9 s). A holder that
// crashes takes its panes with it (they are then lost, for corral
// restore): 512 of them. Fewer under a low open-file limit (see
// groupSize).
const GroupSize = 512

// filesPerPane bounds the descriptors a pane holds in its holder: about
// five (its socket, terminal, ring, the daemon's connection), and while a
// daemon adopts it again, the holder's own reading of the terminal and the
// next daemon's connection. A holder of GroupSize panes needs an open-file
// hard limit of 4,160 (64 + 512 × 8); under the common 4,096 it takes 504.
const filesPerPane = 8

// spareFiles are the descriptors a holder needs besides its panes': its
// own, and a margin.
const spareFiles = 64

// groupSize is how many panes a holder takes under an open-file hard limit
// (a Go process raises its soft limit to it): GroupSize, or as many as the
// limit holds, and always one.
func groupSize(limit uint64) int {
	if limit >= spareFiles+GroupSize*filesPerPane {
		return GroupSize
	}
	return int(max(limit, spareFiles+filesPerPane)-spareFiles) / filesPerPane
}

// Pool starts panes in holder processes (exe hold), up to Size panes each,
// one start at a time. A holder process outlives the daemon; a daemon of
// its own starts panes in new ones.
type Pool struct {
	Exe    string
	Stderr *os.File // the holders' log
	Size   int      // GroupSize when 0

	mu  sync.Mutex // held while a start is under way; guards cur
	cur *holderProcess
}

// holderProcess is the daemon's side of one holder process.
type holderProcess struct {
	cmd     *exec.Cmd
	in      *os.File       // requests, one JSON line each
	lines   chan readyLine // answers, in order (room for all: the reader never waits)
	started int            // panes started in it
	gone    bool           // no more starts in it
}

type readyLine struct {
	r   Ready
	err error
}

// Started is a pane started in a holder.
type Started struct {
	Ready
	g      *holderProcess
	socket string
}

// errGroupGone: the holder process ended before it took the pane (its
// last pane had just ended); another one takes it.
var errGroupGone = errors.New("the holder ended")

// Spawn starts a holder process of its own for one pane.
func Spawn(exe string, cfg Config, stderr *os.File, timeout time.Duration) (Started, error) {
	p := &Pool{Exe: exe, Stderr: stderr, Size: 1}
	return p.Start(cfg, timeout)
}

// Start starts cfg's program in a holder with room, or in a new one, and
// waits at most timeout for it to report Ready.
func (p *Pool) Start(cfg Config, timeout time.Duration) (Started, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	size := p.Size
	if size <= 0 {
		var l syscall.Rlimit
		size = GroupSize
		if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil {
			size = groupSize(l.Max)
		}
	}
	for try := 0; ; try++ {
		g := p.cur
		if g == nil || g.gone || g.started >= size {
			var err error
			if g, err = p.spawn(size); err != nil {
				return Started{}, err
			}
			p.cur = g
		}
		r, err := g.start(cfg, timeout)
		if errors.Is(err, errGroupGone) && try == 0 {
			continue
		}
		if err != nil {
			return Started{}, err
		}
		return Started{Ready: r, g: g, socket: cfg.Socket}, nil
	}
}

// Group is the started program's process group, marked with mark.
func (r Ready) Group(mark string) procs.Group {
	return procs.Group{Root: r.ProgramPID, Start: r.ProgramStart, Mark: mark}
}

// Group is the pane's program's process group, marked with mark.
func (w Welcome) Group(mark string) procs.Group {
	return procs.Group{Root: w.ProgramPID, Start: w.ProgramStart, Mark: mark}
}

// Abandon ends a pane whose start the daemon cannot complete (it could not
// connect to it): its processes are killed and its holder forgets it.
func (s Started) Abandon() {
	_ = s.Group("").SignalGroup(syscall.SIGKILL)
	if s.g == nil {
		return
	}
	s.g.end(s.socket)
}

// end asks the holder to end the pane at socket (nothing if it is gone).
func (g *holderProcess) end(socket string) {
	b, _ := json.Marshal(Request{End: socket})
	_ = g.in.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = g.in.Write(append(b, '\n'))
}

// spawn starts a holder process in a session of its own, so that it
// outlives the daemon. The daemon collects its exit status if it goes
// first.
func (p *Pool) spawn(size int) (*holderProcess, error) {
	cmd := exec.Command(p.Exe, "hold")
	if self, err := os.Executable(); err == nil && p.Exe == "/proc/self/exe" {
		cmd.Args[0] = self // what ps shows
	}
	cmd.Dir = "/"
	cmd.Stderr = p.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// The pipes are made here, not by os/exec: writes to the holder take
	// a deadline, and Wait does not close them under a writer.
	inR, in, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	out, w, err := os.Pipe()
	if err != nil {
		inR.Close()
		in.Close()
		return nil, err
	}
	cmd.Stdin = inR
	cmd.Stdout = w
	_, err = procs.Spawn(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	w.Close()
	inR.Close()
	if err != nil {
		in.Close()
		out.Close()
		return nil, fmt.Errorf("start a holder: %w", err)
	}
	g := &holderProcess{cmd: cmd, in: in, lines: make(chan readyLine, size+1)}
	go func() {
		procs.WaitExit(cmd.Process.Pid) // no thread blocked in wait4 per holder
		_ = cmd.Wait()
		procs.Release(cmd.Process.Pid)
		in.Close()
	}()
	go func() {
		defer out.Close()
		rd := bufio.NewReader(io.LimitReader(out, 1<<20))
		for {
			line, err := rd.ReadBytes('\n')
			var r Ready
			if err == nil {
				if err = json.Unmarshal(line, &r); err != nil {
					err = fmt.Errorf("the holder's answer %q: %w", clip(string(line)), err)
				}
			} else if errors.Is(err, io.EOF) {
				err = errGroupGone
			}
			g.lines <- readyLine{r, err}
			if err != nil {
				close(g.lines)
				return
			}
		}
	}()
	return g, nil
}

// start asks the holder to start one pane and waits for its answer.
func (g *holderProcess) start(cfg Config, timeout time.Duration) (Ready, error) {
	b, err := json.Marshal(Request{Start: &cfg})
	if err != nil {
		return Ready{}, err
	}
	if len(b) > MaxRequest {
		return Ready{}, fmt.Errorf("the pane's command and environment take %d bytes; a holder takes at most %d", len(b), MaxRequest)
	}
	deadline := time.Now().Add(timeout)
	_ = g.in.SetWriteDeadline(deadline)
	if _, err := g.in.Write(append(b, '\n')); err != nil {
		g.fail()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return Ready{}, fmt.Errorf("the pane's holder did not take its start within %v", timeout)
		}
		return Ready{}, errGroupGone // it ended before it read the request
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case l, ok := <-g.lines:
		switch {
		case !ok:
			l.err = errGroupGone
		case l.err == nil && l.r.Ending:
			l.err = errGroupGone
		case l.err == nil && l.r.Error != "":
			return Ready{}, errors.New(l.r.Error)
		}
		if l.err != nil {
			g.fail()
			if !errors.Is(l.err, errGroupGone) {
				g.end(cfg.Socket)
				return Ready{}, fmt.Errorf("the pane's holder did not start: %w", l.err)
			}
			return Ready{}, l.err
		}
		g.started++
		return l.r, nil
	case <-t.C:
		// The process is not used again; the pane, if it comes, is ended
		// (the holder reads its requests in order).
		g.fail()
		g.end(cfg.Socket)
		return Ready{}, fmt.Errorf("the pane's holder did not start within %v", timeout)
	}
}

// fail stops using the process for new panes, and ends it if it holds
// none.
func (g *holderProcess) fail() {
	g.gone = true
	if g.started == 0 {
		_ = g.cmd.Process.Kill()
	}
}

// EndStray ends the pane at socket without its secret, for a daemon that
// found a holder socket its pane table does not name, or a lost pane whose
// program has ended: the pane's processes are ended and its holder lets it
// go. A holder refuses for a pane a daemon holds, and with onlyExited for
// one whose program still runs (ErrStillRuns). ErrOldHolder: the holder is
// of a build that knows no such request (one pane per process: ending the
// process ends the pane).
func EndStray(socket string, onlyExited bool, wait time.Duration) error {
	nc, err := net.DialTimeout("unix", socket, wait)
	if err != nil {
		return err
	}
	c := nc.(*net.UnixConn)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(wait))
	if _, err := checkPeer(c); err != nil {
		return err
	}
	if err := writeJSON(c, tEnd, endMsg{OnlyExited: onlyExited}); err != nil {
		return err
	}
	typ, b, err := readFrame(c, nil)
	switch {
	case err != nil:
		return err
	case typ == tEnded:
		return nil
	case typ == tError && string(b) == errStillRuns:
		return ErrStillRuns
	case typ == tError && strings.Contains(string(b), fmt.Sprintf("want %q", byte(tHello))):
		return ErrOldHolder
	case typ == tError:
		return fmt.Errorf("refused: %s", clip(string(b)))
	}
	return fmt.Errorf("%w: got type %q, want the end's answer", ErrFrame, typ)
}

// ErrStillRuns: see EndStray.
var ErrStillRuns = errors.New("its program still runs")

// ErrOldHolder: see EndStray.
var ErrOldHolder = errors.New("the holder does not know the end request")
