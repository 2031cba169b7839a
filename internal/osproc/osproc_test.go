package osproc

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/proctest"
)

func TestParseTpgid(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		bad  bool
	}{
		{"4242 (bash) S 1 4242 4242 34817 5151 4194304 0", 5151, false},
		{"17 (my (odd) prog) R 1 17 17 0 -1 0", -1, false},
		{"17 (x) S 1 17", 0, true},
		{"garbage", 0, true},
		{"1 (a) S 1 1 1 1 notanumber", 0, true},
	} {
		got, err := ParseTpgid([]byte(c.in))
		if (err != nil) != c.bad || (!c.bad && got != c.want) {
			t.Errorf("ParseTpgid(%q) = %d, %v", c.in, got, err)
		}
	}
}

func FuzzParseTpgid(f *testing.F) {
	f.Add([]byte("4242 (bash) S 1 4242 4242 34817 5151 4194304 0"))
	f.Add([]byte("17 (my (odd) prog) R 1 17 17 0 -1 0"))
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = ParseTpgid(b) })
}

// startChild runs a sleeping child with an environment entry of its own,
// ended and waited for when the test ends.
func startChild(t *testing.T, mark string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), mark)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// A child's line of the table, its environment, argv and name, and its
// owner, as the rest of corral asks for them.
func TestProcessTable(t *testing.T) {
	mark := "CORRAL_OSPROC_TEST=" + time.Now().Format("150405.000000")
	cmd := startChild(t, mark)
	pid := cmd.Process.Pid
	p, ok := Stat(pid)
	if !ok || p.PID != pid || p.PPID != os.Getpid() || p.PGID != pid || p.Zombie() {
		t.Fatalf("Stat(%d) = %+v, %v", pid, p, ok)
	}
	if sid, _ := unix.Getsid(pid); p.SID != sid {
		t.Errorf("session %d, getsid says %d", p.SID, sid)
	}
	if self, ok := Stat(os.Getpid()); p.Start == 0 || !ok || p.Start < self.Start {
		t.Errorf("the child's start %d is unknown or before its parent's (%d)", p.Start, self.Start)
	}
	if got := Table()[pid]; got.PPID != p.PPID || got.PGID != p.PGID || got.SID != p.SID || got.Start != p.Start {
		t.Errorf("Table()[%d] = %+v, Stat %+v", pid, got, p)
	}
	if !slices.Contains(PIDs(), pid) {
		t.Errorf("PIDs() lacks %d", pid)
	}
	if !HasEnv(pid, mark) || HasEnv(pid, mark+"x") || HasEnv(pid, "") {
		t.Errorf("HasEnv(%d, %q) is wrong", pid, mark)
	}
	if argv, err := Cmdline(pid); err != nil || !slices.Equal(argv, []string{"sleep", "60"}) {
		t.Errorf("Cmdline = %q, %v", argv, err)
	}
	if got := CommandLine(pid); got != "sleep 60" {
		t.Errorf("CommandLine = %q", got)
	}
	if got := Name(pid); got != "sleep" {
		t.Errorf("Name = %q", got)
	}
	if uid, ok := Owner(pid); !ok || uid != os.Getuid() {
		t.Errorf("Owner = %d, %v", uid, ok)
	}
	if _, ok := Stat(-1); ok {
		t.Error("Stat(-1) found a process")
	}
	if _, err := Environ(-1); err == nil {
		t.Error("Environ(-1) read something")
	}
}

// WaitExit returns once the child has exited, and leaves its status to
// Wait; a zombie already there counts as exited.
func TestWaitExit(t *testing.T) {
	cmd := startChild(t, "K=V")
	done := make(chan struct{})
	go func() { WaitExit(cmd.Process.Pid); close(done) }()
	select {
	case <-done:
		t.Fatal("WaitExit returned while the child runs")
	case <-time.After(50 * time.Millisecond):
	}
	live, _ := Stat(cmd.Process.Pid)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("WaitExit did not return after the child exited")
	}
	if p, ok := Stat(cmd.Process.Pid); !ok || !p.Zombie() || p.Start != live.Start {
		t.Fatalf("the child was reaped by WaitExit, or lost its start time: %+v %v", p, ok)
	}
	WaitExit(cmd.Process.Pid) // a zombie: at once
	if err := cmd.Wait(); err == nil {
		t.Fatal("Wait got no status of a killed child")
	}
}

func TestPeerCred(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	uid, pid, err := PeerCred(fds[0])
	if err != nil || uid != os.Getuid() || pid != os.Getpid() {
		t.Fatalf("PeerCred = %d, %d, %v", uid, pid, err)
	}
}

// The terminal side of a pty, opened from its master, tells how much
// typed input waits (a cooked terminal counts whole lines); FlushInput
// drops it.
func TestPeerInput(t *testing.T) {
	m, tty, err := pty.Open()
	if err != nil {
		t.Skip(err)
	}
	defer m.Close()
	defer tty.Close()
	if _, err := m.Write([]byte("abc\n")); err != nil {
		t.Fatal(err)
	}
	peer, err := OpenPeer(int(m.Fd()), unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(peer)
	var n int
	proctest.WaitFor(5*time.Second, func() bool {
		n, err = InputQueued(peer)
		return err != nil || n >= 4
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Fatalf("InputQueued = %d, want 4", n)
	}
	if err := FlushInput(int(tty.Fd())); err != nil {
		t.Fatal(err)
	}
	if n, err := InputQueued(peer); err != nil || n != 0 {
		t.Fatalf("after FlushInput: %d, %v", n, err)
	}
}

func TestOpenFDs(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fds, err := OpenFDs()
	if err != nil || !slices.Contains(fds, int(f.Fd())) || !slices.Contains(fds, 0) {
		t.Fatalf("OpenFDs = %v, %v; want %d among them", fds, err, f.Fd())
	}
}

func TestSealedMemory(t *testing.T) {
	fd, err := MemfdCreate("osproc-test")
	if err != nil {
		t.Skip(err)
	}
	defer unix.Close(fd)
	if SealedAtSize(fd) {
		t.Fatal("a new memfd is sealed")
	}
	if err := unix.Ftruncate(fd, 4096); err != nil {
		t.Fatal(err)
	}
	if err := SealSize(fd); err != nil {
		t.Fatal(err)
	}
	if !SealedAtSize(fd) || unix.Ftruncate(fd, 8192) == nil {
		t.Fatal("a sealed memfd grows")
	}
}

// Signal reaches the process at a pid only while it is the one that
// started at the given time: another start time (the pid come round again
// to another program) is refused with ESRCH and signals nothing.
func TestSignalOnlyTheSameProcess(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	p, ok := Stat(pid)
	if !ok || p.Start == 0 {
		t.Fatalf("stat of %d: %+v %v", pid, p, ok)
	}
	if err := Signal(pid, p.Start+1, syscall.SIGTERM); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("another start time: %v, want ESRCH", err)
	}
	if err := Signal(pid, p.Start, 0); err != nil {
		t.Fatalf("signal 0 to the same process: %v", err)
	}
	if now, ok := Stat(pid); !ok || now.State == 'Z' {
		t.Fatal("the process refused a signal ended all the same")
	}
	if err := Signal(pid, p.Start, syscall.SIGTERM); err != nil {
		t.Fatalf("the same process: %v", err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Fatalf("after SIGTERM: %v", err)
	}
	if err := Signal(pid, p.Start, syscall.SIGTERM); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("a process reaped: %v, want ESRCH", err)
	}
}
