package holder

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/proctest"
)

// The test binary is also the holder: "hold" runs Main.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "hold" {
		os.Exit(Main(os.Stdin, os.Stdout, os.Stderr))
	}
	// The parallel tests wait, mostly: on a holder's trim, a quiet inbox.
	proctest.MoreParallel(4)
	os.Exit(m.Run())
}

func paneConfig(dir, id, script string) Config {
	mark := "CORRAL_PANE=" + id
	return Config{Socket: filepath.Join(dir, id+".sock"), Secret: strings.Repeat("s", 64), Path: "/bin/sh",
		Argv: []string{"sh", "-c", script}, Dir: "/", Env: []string{"PATH=/usr/bin:/bin", mark}, Cols: 80, Rows: 24, Mark: mark}
}

// output reads a stream connection's output until it holds want.
func output(t *testing.T, c *Conn, want string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	var got strings.Builder
	for !strings.Contains(got.String(), want) {
		m, err := c.Next()
		if err != nil {
			t.Fatalf("waiting for %q: %v (got %q)", want, err, got.String())
		}
		got.Write(m.Output)
	}
}

// collect ends a pane through its connection, as a daemon does.
func collect(t *testing.T, c *Conn) {
	t.Helper()
	if err := c.Kill(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	for {
		m, err := c.Next()
		if err != nil {
			t.Fatalf("waiting for the exit: %v", err)
		}
		if m.Exit {
			break
		}
	}
	if err := c.Collect(); err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func waitGone(t *testing.T, what string, pid int) {
	t.Helper()
	if !proctest.WaitFor(10*time.Second, func() bool { return !proctest.Alive(pid) }) {
		t.Fatalf("%s (pid %d) still runs", what, pid)
	}
}

// Panes share holder processes, Size to a process; each pane is its own
// (socket, secret, terminal); a process ends with its last pane, and the
// next start then goes to a new one. A stray pane (no daemon knows its
// secret) is ended alone, not its process's other panes.
func TestPoolGroupsPanes(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	pool := &Pool{Exe: os.Args[0], Stderr: os.Stderr, Size: 2}
	start := func(id string) (Started, *Conn) {
		t.Helper()
		cfg := paneConfig(dir, id, "echo ready-"+id+"; exec sleep 1041")
		st, err := pool.Start(cfg, 10*time.Second)
		if err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
		c, err := DialStream(cfg.Socket, cfg.Secret, 5*time.Second)
		if err != nil {
			t.Fatalf("dial %s: %v", id, err)
		}
		output(t, c, "ready-"+id)
		if c.Welcome.HolderPID != st.PID || c.Welcome.ProgramPID != st.ProgramPID ||
			c.Welcome.ProgramStart == 0 || c.Welcome.ProgramStart != st.ProgramStart {
			t.Fatalf("%s: welcome %+v, started %+v", id, c.Welcome, st.Ready)
		}
		return st, c
	}
	a, ca := start("a")
	b, cb := start("b")
	c, cc := start("c")
	// The holders end during the test: a pid ended long ago may name
	// another package's process at the cleanup.
	started := map[int]string{a.PID: proctest.Started(a.PID), c.PID: proctest.Started(c.PID)}
	t.Cleanup(func() {
		for pid, was := range started {
			if was != "" && proctest.Started(pid) == was {
				syscall.Kill(pid, syscall.SIGTERM)
			}
		}
	})
	if a.PID != b.PID || c.PID == a.PID {
		t.Fatalf("holders: a %d, b %d, c %d; want a and b in one, c in another", a.PID, b.PID, c.PID)
	}
	// The first process ends with its last pane, not before.
	collect(t, ca)
	if !proctest.Alive(b.PID) {
		t.Fatal("the holder ended with panes left")
	}
	collect(t, cb)
	waitGone(t, "the holder of a and b", a.PID)
	if _, err := os.Stat(filepath.Join(dir, "a.sock")); err == nil {
		t.Error("a's socket outlived its pane")
	}

	// d goes with c. No daemon connects to it: a stray, ended alone, and
	// what it held is let go (the process serves on).
	fds := openFDs(c.PID)
	d, err := pool.Start(paneConfig(dir, "d", "exec sleep 1042"), 10*time.Second)
	if err != nil || d.PID != c.PID {
		t.Fatalf("start d: %v (holder %d, c's %d)", err, d.PID, c.PID)
	}
	if err := EndStray(filepath.Join(dir, "c.sock"), false, time.Second); err == nil {
		t.Fatal("a pane a daemon holds was ended as a stray")
	}
	if err := EndStray(filepath.Join(dir, "d.sock"), false, time.Second); err != nil {
		t.Fatalf("end the stray: %v", err)
	}
	waitGone(t, "the stray's program", d.ProgramPID)
	if !proctest.WaitFor(5*time.Second, func() bool { _, err := os.Stat(filepath.Join(dir, "d.sock")); return err != nil }) {
		t.Fatal("the stray's socket is still there")
	}
	if !proctest.Alive(c.ProgramPID) {
		t.Fatal("ending the stray ended its neighbour")
	}
	if !proctest.WaitFor(5*time.Second, func() bool { return openFDs(c.PID) <= fds }) {
		t.Fatalf("the holder keeps %d descriptors, %d before the stray", openFDs(c.PID), fds)
	}
	cc.Kill(0) // still served
	collect(t, cc)
	waitGone(t, "the holder of c", c.PID)

	// The process the pool would use has ended: the next start goes to a
	// new one.
	e, ce := start("e")
	if e.PID == c.PID {
		t.Fatal("a start in an ended holder")
	}
	collect(t, ce)
	waitGone(t, "the holder of e", e.PID)
}

// SIGTERM to a holder process ends every pane of it; Abandon ends one.
func TestPoolSigtermAndAbandon(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	pool := &Pool{Exe: os.Args[0], Stderr: os.Stderr}
	var sts []Started
	for _, id := range []string{"x", "y", "z"} {
		st, err := pool.Start(paneConfig(dir, id, "exec sleep 1043"), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		sts = append(sts, st)
	}
	proctest.KillAtCleanup(t, sts[0].PID)
	sts[2].Abandon()
	waitGone(t, "the abandoned pane's program", sts[2].ProgramPID)
	if !proctest.Alive(sts[0].ProgramPID) || !proctest.Alive(sts[1].ProgramPID) {
		t.Fatal("Abandon ended another pane")
	}
	syscall.Kill(sts[0].PID, syscall.SIGTERM)
	for _, st := range sts[:2] {
		waitGone(t, "a program after its holder's SIGTERM", st.ProgramPID)
	}
	waitGone(t, "the holder after SIGTERM", sts[0].PID)
}

// A pane that fails to start is answered with its error, and a holder
// whose only start failed ends.
func TestPoolStartFails(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	pool := &Pool{Exe: os.Args[0], Stderr: os.Stderr}
	cfg := paneConfig(dir, "bad", "true")
	cfg.Path = filepath.Join(dir, "no-such-program")
	_, err := pool.Start(cfg, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "no-such-program") {
		t.Fatalf("start of a missing program: %v", err)
	}
	pool.mu.Lock()
	pid := pool.cur.cmd.Process.Pid
	pool.mu.Unlock()
	waitGone(t, "a holder whose only start failed", pid)
	if err := EndStray(filepath.Join(dir, "none.sock"), false, time.Second); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("EndStray of no socket: %v", err)
	}
}

func openFDs(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents)
}

// holderProc is a holder process driven by hand through its stdin.
type holderProc struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	log *logBuffer // its stderr, also passed on to the test's
}

// logBuffer keeps what a holder logs.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) has(s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Contains(b.buf.String(), s)
}

func startHolderProc(t *testing.T) *holderProc {
	cmd := exec.Command(os.Args[0], "hold")
	log := &logBuffer{}
	cmd.Stderr = io.MultiWriter(os.Stderr, log)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &holderProc{t: t, cmd: cmd, in: in, out: bufio.NewReader(out), log: log}
}

func (h *holderProc) send(line []byte) {
	h.t.Helper()
	if _, err := h.in.Write(append(line, '\n')); err != nil {
		h.t.Fatal(err)
	}
}

func (h *holderProc) ready() Ready {
	h.t.Helper()
	line, err := h.out.ReadBytes('\n')
	var r Ready
	if err != nil || json.Unmarshal(line, &r) != nil {
		h.t.Fatalf("holder's answer %q: %v", line, err)
	}
	return r
}

func (h *holderProc) start(cfg Config) Ready {
	h.t.Helper()
	b, _ := json.Marshal(Request{Start: &cfg})
	h.send(b)
	return h.ready()
}

// Bad requests are answered and skipped: an over-long line (read to its
// end, not left in the pipe for the daemon to wait on), a line that is not
// JSON; the next request is served.
func TestHolderSkipsBadRequests(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	h := startHolderProc(t)
	go h.in.Write(append(bytes.Repeat([]byte("x"), MaxRequest+10), '\n'))
	if r := h.ready(); !strings.Contains(r.Error, "over") {
		t.Fatalf("an over-long request: %+v", r)
	}
	h.send([]byte("{not json"))
	if r := h.ready(); r.Error == "" {
		t.Fatalf("a request that is not JSON: %+v", r)
	}
	r := h.start(paneConfig(dir, "ok", "exec sleep 1045"))
	if r.Error != "" || r.ProgramPID == 0 {
		t.Fatalf("a start after bad requests: %+v", r)
	}
	// The daemon refuses to send what the holder would refuse.
	cfg := paneConfig(dir, "big", "true")
	cfg.Env = append(cfg.Env, "BIG="+strings.Repeat("<", MaxRequest/5))
	if _, err := (&Pool{Exe: os.Args[0]}).Start(cfg, 5*time.Second); err == nil || !strings.Contains(err.Error(), "bytes") {
		t.Fatalf("a start over the limit: %v", err)
	}
	syscall.Kill(r.ProgramPID, syscall.SIGKILL)
}

// While a holder ends (SIGTERM; a pane slow to go), a start is answered
// "ending", not left unread: the pool starts it in another process.
func TestHolderEndingAnswersStarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	h := startHolderProc(t)
	armed := filepath.Join(dir, "armed")
	slow := h.start(paneConfig(dir, "slow", `trap "" HUP; : > `+armed+`; exec sleep 1046`))
	if slow.Error != "" {
		t.Fatal(slow.Error)
	}
	// A SIGHUP before the trap would end the pane, and the holder, at once.
	if !proctest.WaitFor(10*time.Second, func() bool { _, err := os.Stat(armed); return err == nil }) {
		t.Fatal("the slow pane never ignored SIGHUP")
	}
	h.cmd.Process.Signal(syscall.SIGTERM)
	// Ending (the pane's SIGHUP sent; SIGKILL comes a second later).
	if !proctest.WaitFor(10*time.Second, func() bool { return h.log.has("SIGTERM: ending") }) {
		t.Fatal("the holder never said it was ending")
	}
	if r := h.start(paneConfig(dir, "late", "exec sleep 1047")); !r.Ending || r.ProgramPID != 0 {
		t.Fatalf("a start while ending: %+v", r)
	}
	waitGone(t, "the slow pane's program", slow.ProgramPID)
	waitGone(t, "the holder", h.cmd.Process.Pid)
}

// A daemon connected to a pane (reading the terminal itself, the shared
// ring) gets its exit status when a SIGTERM ends the holder, before the
// holder goes; and an end request made only for an exited program is
// refused while it runs.
func TestSigtermDeliversExit(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	pool := &Pool{Exe: os.Args[0]}
	cfg := paneConfig(dir, "s", "exec sleep 1048")
	st, err := pool.Start(cfg, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	proctest.KillAtCleanup(t, st.PID)
	c, err := Dial(cfg.Socket, cfg.Secret, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Ring == nil {
		t.Fatal("no shared ring")
	}
	unix.Close(c.TakePTY())
	if err := EndStray(cfg.Socket, true, time.Second); err == nil {
		t.Fatal("a held pane ended as a stray")
	}
	syscall.Kill(st.PID, syscall.SIGTERM)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	for {
		m, err := c.Next()
		if err != nil {
			t.Fatalf("no exit status before the connection ended: %v", err)
		}
		if m.Exit {
			if m.Code != 128+int(syscall.SIGHUP) {
				t.Fatalf("exit code %d", m.Code)
			}
			break
		}
	}
	waitGone(t, "the holder", st.PID)
}

// A lost pane whose program runs is not ended by an end request made only
// for exited programs; once its program has exited, it is. A pane started
// again at the same path (corral restore keeps the id) keeps its socket
// when the old one is let go.
func TestEndOnlyExitedAndPathReuse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	pool := &Pool{Exe: os.Args[0]}
	flag := filepath.Join(dir, "go")
	cfg := paneConfig(dir, "p", "while [ ! -e "+flag+" ]; do sleep 0.02; done; trap '' HUP; sleep 0.3")
	st, err := pool.Start(cfg, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	proctest.KillAtCleanup(t, st.PID)
	if err := EndStray(cfg.Socket, true, time.Second); !errors.Is(err, ErrStillRuns) {
		t.Fatalf("end of a running program, only if exited: %v", err)
	}
	os.WriteFile(flag, nil, 0o600)
	waitGone(t, "the program", st.ProgramPID)
	// The holder may not have seen the exit yet: ErrStillRuns until it has.
	if !proctest.WaitFor(5*time.Second, func() bool {
		err = EndStray(cfg.Socket, true, time.Second)
		return !errors.Is(err, ErrStillRuns)
	}) || err != nil {
		t.Fatalf("end of an exited program: %v", err)
	}
	// Started again at once, at the same path, in the same process.
	again := paneConfig(dir, "p", "exec sleep 1049")
	st2, err := pool.Start(again, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// A window for the old pane's end to take the new pane's socket, were
	// it to: a wrong removal cannot be waited for.
	time.Sleep(300 * time.Millisecond)
	c, err := DialStream(again.Socket, again.Secret, 5*time.Second)
	if err != nil {
		t.Fatalf("the new pane's socket: %v", err)
	}
	collect(t, c)
	waitGone(t, "the program started again", st2.ProgramPID)
}

// Abandon ends the pane in its holder: its socket goes, and a holder with
// no other pane ends.
func TestAbandonLetsGo(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	pool := &Pool{Exe: os.Args[0]}
	cfg := paneConfig(dir, "a", "exec sleep 1050")
	st, err := pool.Start(cfg, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	proctest.KillAtCleanup(t, st.PID)
	st.Abandon()
	waitGone(t, "the holder of an abandoned pane", st.PID)
	if _, err := os.Stat(cfg.Socket); err == nil {
		t.Fatal("the abandoned pane's socket is still there")
	}
}

// A pane let go removes its socket file only if it is still its own: a
// pane started again at the same path may listen there already.
func TestRemoveKeepsNewerSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "p.sock")
	listenAt := func() (*watched, uint64) {
		os.Remove(sock)
		ln, err := listen(sock)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(sock)
		return ln, fi.Sys().(*syscall.Stat_t).Ino
	}
	oldLn, oldIno := listenAt()
	g := &group{logf: t.Logf, panes: map[string]*holder{}, over: make(chan struct{})}
	old := &holder{cfg: Config{Socket: sock}, ln: oldLn, sockIno: oldIno}
	g.panes[sock] = old
	newLn, _ := listenAt()
	defer newLn.Close()
	g.remove(old)
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("the newer pane's socket was removed: %v", err)
	}
	// Its own socket goes.
	newLn.Close()
	ln, ino := listenAt()
	h := &holder{cfg: Config{Socket: sock}, ln: ln, sockIno: ino}
	g.remove(h)
	if _, err := os.Stat(sock); err == nil {
		t.Fatal("a pane's own socket was left")
	}
}

// A running pane keeps neither its program's environment nor its
// arguments (a whole environment is kilobytes a pane); the program got
// them.
func TestStartLetsGoOfEnvironment(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	cfg := paneConfig(dir, "env", `echo "$CORRAL_PANE $0" > `+out+`; exec sleep 1051`)
	cfg.Argv[0] = "named"
	h, err := start(cfg, t.Logf, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.end()
	var b []byte
	if !proctest.WaitFor(10*time.Second, func() bool { b, _ = os.ReadFile(out); return string(b) == "env named\n" }) {
		t.Fatalf("the program wrote %q, want its mark and its name", b)
	}
	if h.cfg.Env != nil || h.cfg.Argv != nil || h.cmd.Env != nil || h.cmd.Args != nil {
		t.Errorf("kept after the start: config env %q argv %q, command env %q args %q", h.cfg.Env, h.cfg.Argv, h.cmd.Env, h.cmd.Args)
	}
}

// A holder takes fewer panes where the open-file limit would not hold
// GroupSize of them, and always at least one.
func TestGroupSizeUnderFileLimit(t *testing.T) {
	for _, c := range []struct {
		limit uint64
		want  int
	}{
		{1 << 20, GroupSize},
		{20000, 512}, // this limit or more: the whole group
		{4160, 512},  // 64 + 512 × 8
		{4159, 511},  // one descriptor short of the last pane's 8
		{4096, 504},  // a common hard limit
		{2112, 256},  // 64 + 256 × 8
		{1024, 120},
		{256, 24},
		{64, 1},
		{0, 1},
	} {
		if got := groupSize(c.limit); got != c.want {
			t.Errorf("groupSize(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
}

// A pane that ends leaves its path's socket alone when a newer pane of its
// process owns the path, or is starting there, even when the newer socket
// got the inode the old one freed (ext4 hands it out again at once).
func TestRemoveKeepsNewerSocketOfSameInode(t *testing.T) {
	for _, c := range []struct {
		name     string
		newer    bool // the newer pane is in the group
		starting bool // a start is listening at the path
	}{
		{"newer pane registered", true, false},
		{"newer pane starting", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			sock := filepath.Join(dir, "p.sock")
			ln, err := listen(sock)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			fi, _ := os.Stat(sock)
			ino := fi.Sys().(*syscall.Stat_t).Ino
			oldLn, err := listen(filepath.Join(dir, "old.sock"))
			if err != nil {
				t.Fatal(err)
			}
			g := &group{logf: t.Logf, panes: map[string]*holder{}, opening: map[string]int{}, over: make(chan struct{})}
			// The old pane's recorded inode is the newer socket's, as after
			// an inode's reuse.
			old := &holder{cfg: Config{Socket: sock}, ln: oldLn, sockIno: ino}
			g.panes[sock] = old
			if c.newer {
				g.panes[sock] = &holder{cfg: Config{Socket: sock}, ln: ln, sockIno: ino}
			}
			if c.starting {
				g.opening[sock] = 1
			}
			g.remove(old)
			if _, err := os.Stat(sock); err != nil {
				t.Fatalf("the newer pane's socket was removed: %v", err)
			}
		})
	}
}
