package tmuxctl

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/osproc"
	"github.com/corral-dev/corral/internal/proctest"
	"golang.org/x/sys/unix"
)

// TestMain doubles as the hex dumper the SendKeys test runs in a pane.
func TestMain(m *testing.M) {
	if os.Getenv("TMUXCTL_TEST_HEXDUMP") == "1" {
		hexdump()
		os.Exit(0)
	}
	// Each test has a tmux server of its own and mostly waits on it.
	proctest.MoreParallel(4)
	// TestCloseWithServerStopped waits out a send-keys' reply: 3 s here
	// (a reply takes milliseconds), as the race detector's slower runs
	// keep the real 5 s.
	if !proctest.Race {
		keysWait = 3 * time.Second
	}
	os.Exit(m.Run())
}

// hexdump puts its terminal in raw mode and writes every byte it reads as
// hex, a read a line.
func hexdump() {
	tio, err := unix.IoctlGetTermios(0, osproc.GetTermios)
	if err != nil {
		fmt.Println("termios:", err)
		os.Exit(1)
	}
	// cfmakeraw: every byte passes as it is.
	tio.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	tio.Oflag &^= unix.OPOST
	tio.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	tio.Cflag &^= unix.CSIZE | unix.PARENB
	tio.Cflag |= unix.CS8
	tio.Cc[unix.VMIN], tio.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(0, osproc.SetTermios, tio); err != nil {
		fmt.Println("termios:", err)
		os.Exit(1)
	}
	os.Stdout.WriteString("ready\r\n")
	b := make([]byte, 4096)
	for {
		n, err := os.Stdin.Read(b)
		if n > 0 {
			os.Stdout.WriteString("<" + hex.EncodeToString(b[:n]) + ">\r\n")
		}
		if err != nil {
			return
		}
	}
}

// needTmux skips a test without tmux, except in CI (CORRAL_CI=1), which
// installs it: there a missing tmux is a failure.
func needTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err == nil {
		return
	}
	if os.Getenv("CORRAL_CI") == "1" {
		t.Fatal("tmux not found; CI installs it")
	}
	t.Skip("no tmux (apt-get install tmux)")
}

// tserver is a private tmux server for one test, killed at its end.
type tserver struct {
	t    *testing.T
	name string
	srv  Server
}

func newServer(t *testing.T) *tserver {
	t.Helper()
	needTmux(t)
	b := make([]byte, 6)
	rand.Read(b)
	s := &tserver{t: t, name: "corral-test-" + hex.EncodeToString(b)}
	s.srv = Server{Name: s.name}
	t.Cleanup(func() {
		s.run("kill-server")
		if sock, err := s.srv.SocketPath(); err == nil {
			os.Remove(sock)
		}
	})
	return s
}

// run runs a tmux command on the server (tests may; the watcher never
// does), without the user's configuration.
func (s *tserver) run(args ...string) (string, error) {
	flags := []string{"-f", "/dev/null", "-L", s.name}
	if os.Getenv("TMUXCTL_TEST_VV") != "" {
		flags = append(flags, "-vv") // the server logs to tmux-server-PID.log in the working directory
	}
	cmd := exec.Command("tmux", append(flags, args...)...)
	cmd.Env = append(env(), "PS1=$ ", "ENV=")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (s *tserver) must(args ...string) string {
	s.t.Helper()
	out, err := s.run(args...)
	if err != nil {
		s.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return out
}

// size is a window's size as tmux has it.
func (s *tserver) size(target string) string {
	s.t.Helper()
	return s.must("display-message", "-p", "-t", target, "#{window_width}x#{window_height}")
}

// watch watches the server with a short Retry, closed at the test's end.
func (s *tserver) watch(h Handler, opts Options) *Watcher {
	s.t.Helper()
	if opts.Retry == 0 {
		opts.Retry = 100 * time.Millisecond
	}
	if opts.Log == nil {
		var mu sync.Mutex
		done := false
		s.t.Cleanup(func() { mu.Lock(); done = true; mu.Unlock() })
		t := s.t
		opts.Log = func(f string, a ...any) {
			mu.Lock()
			defer mu.Unlock()
			if !done {
				t.Logf("log: "+f, a...)
			}
		}
	}
	w, err := Watch(s.srv, h, opts)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { w.Close() })
	return w
}

// recorder is a Handler that keeps what it was told and checks the
// order of calls: Added first, nothing after Closed, one call at a time.
type recorder struct {
	t *testing.T
	// slow is called on each Output (to fall behind on purpose).
	slow func(id string)

	mu     sync.Mutex // guards the fields that follow
	panes  map[string]*rpane
	log    []string
	inCall bool
	errs   []string
}

type rpane struct {
	info    Pane
	screen  []byte // the last Added or Redraw
	out     bytes.Buffer
	added   int
	redraws int
	changes int
	closed  bool
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{t: t, panes: map[string]*rpane{}}
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, e := range r.errs {
			t.Error(e)
		}
	})
	return r
}

func (r *recorder) enter(what, id string, mustBeAdded bool) *rpane {
	r.mu.Lock()
	if r.inCall {
		r.errs = append(r.errs, what+" "+id+": Handler called while another call runs")
	}
	r.inCall = true
	p := r.panes[id]
	switch {
	case p == nil && mustBeAdded:
		r.errs = append(r.errs, what+" "+id+" before Added")
		p = &rpane{}
	case p != nil && p.closed && what != "Added":
		// An id may be Added again once Closed: a new server counts
		// from %0 again.
		r.errs = append(r.errs, what+" "+id+" after Closed")
	}
	return p
}

func (r *recorder) leave() {
	r.inCall = false
	r.mu.Unlock()
}

func (r *recorder) Added(p Pane, screen []byte) {
	rp := r.enter("Added", p.ID, false)
	if rp != nil && !rp.closed {
		r.errs = append(r.errs, "Added "+p.ID+" twice")
	}
	rp = &rpane{info: p, screen: screen, added: 1}
	r.panes[p.ID] = rp
	r.log = append(r.log, "added "+p.ID)
	r.leave()
}

func (r *recorder) Output(id string, b []byte) {
	rp := r.enter("Output", id, true)
	rp.out.Write(b)
	slow := r.slow
	r.leave()
	if slow != nil {
		slow(id)
	}
}

func (r *recorder) Changed(p Pane) {
	rp := r.enter("Changed", p.ID, true)
	rp.info = p
	rp.changes++
	r.log = append(r.log, "changed "+p.ID)
	r.leave()
}

func (r *recorder) Redraw(id string, screen []byte) {
	rp := r.enter("Redraw", id, true)
	rp.screen = screen
	rp.redraws++
	r.log = append(r.log, "redraw "+id)
	r.leave()
}

func (r *recorder) Closed(id string) {
	rp := r.enter("Closed", id, true)
	rp.closed = true
	r.log = append(r.log, "closed "+id)
	r.leave()
}

// await waits until cond holds of the recorder (its lock held), failing
// the test after the deadline.
func (r *recorder) await(what string, d time.Duration, cond func() bool) {
	r.t.Helper()
	d *= slack
	if !proctest.WaitFor(d, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return cond()
	}) {
		r.mu.Lock()
		defer r.mu.Unlock()
		var b strings.Builder
		for id, p := range r.panes {
			fmt.Fprintf(&b, "\n  %s %+v added=%d closed=%v redraws=%d screen=%q output=%q", id, p.info, p.added, p.closed, p.redraws, clip(p.screen), clip(p.out.Bytes()))
		}
		r.t.Fatalf("waited %v for %s; calls: %v; panes:%s", d, what, r.log, b.String())
	}
}

func clip(b []byte) []byte {
	if len(b) > 400 {
		return b[len(b)-400:]
	}
	return b
}

// live returns the panes added and not closed (lock held).
func (r *recorder) live() map[string]*rpane {
	m := map[string]*rpane{}
	for id, p := range r.panes {
		if !p.closed {
			m[id] = p
		}
	}
	return m
}

// bySession returns the live pane of a session whose command line has
// the marker (lock held).
func (r *recorder) find(marker string) *rpane {
	for _, p := range r.panes {
		if !p.closed && (bytes.Contains(p.screen, []byte(marker)) || bytes.Contains(p.out.Bytes(), []byte(marker))) {
			return p
		}
	}
	return nil
}

// slack stretches every wait for a condition: the tests share two cores
// with the rest of the suite under -race, and a wait only ends early.
const slack = 4

// awaitFn polls cond until it holds, failing the test after d.
func awaitFn(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	d *= slack
	if !proctest.WaitFor(d, cond) {
		t.Fatalf("waited %v for %s", d, what)
	}
}

// echoLoop is a pane's program: it prints a marker, then echoes each
// line it reads.
func echoLoop(marker string) string {
	return fmt.Sprintf(`printf '%%s\n' %s; while IFS= read -r l; do printf 'echo:%%s\n' "$l"; done`, marker)
}
