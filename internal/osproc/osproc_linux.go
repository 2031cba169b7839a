package osproc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Table reads every process's parent, group, session, owner and state.
func Table() map[int]Proc {
	entries, _ := os.ReadDir("/proc")
	out := make(map[int]Proc, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := Stat(pid); ok {
			out[pid] = p
		}
	}
	return out
}

// PIDs lists every process.
func PIDs() []int {
	entries, _ := os.ReadDir("/proc")
	pids := make([]int, 0, len(entries))
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Stat reads one process's line of the table (ok false: no such process).
func Stat(pid int) (Proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Proc{}, false
	}
	p, ok := parseStat(b)
	p.PID = pid
	return p, ok
}

// Owner returns the user a process runs as (ok false: no such process).
func Owner(pid int) (uid int, ok bool) {
	fi, err := os.Stat("/proc/" + strconv.Itoa(pid))
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// parseStat reads "pid (comm) S ppid pgrp session … starttime …": comm
// may hold spaces and ')', so the fields start after the last ')'.
// starttime is field 22 of proc(5), the 20th after comm.
func parseStat(b []byte) (Proc, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return Proc{}, false
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 4 || f[0] == "" {
		return Proc{}, false
	}
	p := Proc{State: f[0][0]}
	var err1, err2, err3 error
	p.PPID, err1 = strconv.Atoi(f[1])
	p.PGID, err2 = strconv.Atoi(f[2])
	p.SID, err3 = strconv.Atoi(f[3])
	if len(f) > 19 {
		p.Start, _ = strconv.ParseUint(f[19], 10, 64)
	}
	return p, err1 == nil && err2 == nil && err3 == nil
}

// Environ returns process pid's environment as it was when it started.
func Environ(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil, noProcess(pid, err)
	}
	return splitNUL(b), nil
}

// Cmdline returns process pid's argv.
func Cmdline(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, noProcess(pid, err)
	}
	return splitNUL(b), nil
}

// Name returns the kernel's short name of process pid (its executable's
// base name, cut to 15 bytes), "" when it cannot be read.
func Name(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// SelfExe is the path that runs this very binary, even after the file it
// was started from is replaced (an upgrade).
func SelfExe() string { return "/proc/self/exe" }

// Subreaper makes the calling process a child subreaper: its orphaned
// descendants are re-parented to it instead of init.
func Subreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	return nil
}

// WaitExit blocks until process pid (a child of the caller) has exited,
// without collecting its status: the caller's Wait still gets it. It waits
// on a pidfd in the runtime's poller, so a running child holds no OS
// thread blocked in waitid (a thread and its stacks per pane, or per
// holder); where pidfds are missing it falls back to waitid.
func WaitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		waitID(pid)
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		waitID(pid)
		return
	}
	// A pidfd reads as ready once its process has exited; it is checked
	// with poll before each wait, so an exit before registration counts.
	var pollErr error
	err = rc.Read(func(fd uintptr) bool {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, 0)
		if err != nil && err != unix.EINTR {
			pollErr = err
			return true
		}
		return err == nil && n > 0
	})
	if err != nil || pollErr != nil {
		waitID(pid) // never an early return: the caller ends what is left
	}
}

// waitID is WaitExit in a blocking waitid.
func waitID(pid int) {
	for {
		var info [128]byte // siginfo_t
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pWaitPID, uintptr(pid), uintptr(unsafe.Pointer(&info)), wExited|wNoWait, 0, 0)
		if e != syscall.EINTR {
			return
		}
	}
}

const (
	pWaitPID = 1
	wExited  = 4
	wNoWait  = 0x01000000
)

// OpenPeer opens the terminal side of the pseudo-terminal whose master is
// fd (TIOCGPTPEER), with flags such as O_RDONLY|O_NOCTTY|O_NONBLOCK. The
// caller closes it: a held descriptor keeps the terminal open after its
// program exits.
func OpenPeer(master int, flags int) (int, error) {
	peer, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(master), unix.TIOCGPTPEER, uintptr(flags|unix.O_CLOEXEC))
	if errno != 0 {
		return -1, fmt.Errorf("open the terminal side of the pty: %w", errno)
	}
	return int(peer), nil
}

// InputQueued returns how many bytes typed into terminal fd wait to be
// read, every byte written to its pty's master before the call counted.
// Those reach the terminal's input queue through a kernel worker, a
// moment later: right after a write TIOCINQ alone said 0 nine times in
// ten (and the text typed was taken as read). A poll of the terminal
// runs that worker's pending work first (n_tty_poll).
func InputQueued(fd int) (int, error) {
	_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
	return unix.IoctlGetInt(fd, unix.TIOCINQ)
}

// OutputQueued returns how many bytes the program wrote to its terminal
// that master, the pty's master, has not read yet. On Linux a master is a
// terminal whose input is the program's output: the same question as
// InputQueued, the same kernel worker to run first.
func OutputQueued(master int) (int, error) { return InputQueued(master) }

// FlushInput discards what was typed into terminal fd and not yet read.
func FlushInput(fd int) error { return unix.IoctlSetInt(fd, unix.TCFLSH, unix.TCIFLUSH) }

// The ioctl requests that read and set a terminal's termios.
const (
	GetTermios = unix.TCGETS
	SetTermios = unix.TCSETS
)

// PeerCred returns the user and process id of the process at the other
// end of unix socket fd (SO_PEERCRED).
func PeerCred(fd int) (uid, pid int, err error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return 0, 0, fmt.Errorf("SO_PEERCRED: %w", err)
	}
	return int(cred.Uid), int(cred.Pid), nil
}

// OpenFDs lists the descriptors this process holds.
func OpenFDs() ([]int, error) { return listFDs("/proc/self/fd") }

// Foreground reads, again and again, the foreground process group of the
// controlling terminal of one process. It keeps /proc/PID/stat open: one
// pread a question instead of an open, read and close.
type Foreground struct {
	pid int
	mu  sync.Mutex
	f   *os.File
	buf []byte
}

// NewForeground asks about process pid's terminal; nothing is opened
// until the first Get.
func NewForeground(pid int) *Foreground { return &Foreground{pid: pid} }

// Get returns the foreground process group (0 or -1: the process has no
// terminal), or an error once the process is gone.
func (g *Foreground) Get() (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.f == nil {
		if g.pid <= 0 {
			return 0, errors.New("no process")
		}
		f, err := os.Open("/proc/" + strconv.Itoa(g.pid) + "/stat")
		if err != nil {
			return 0, err
		}
		g.f, g.buf = f, make([]byte, 1024)
	}
	n, err := g.f.ReadAt(g.buf, 0)
	if n == 0 && err != nil {
		return 0, err // ESRCH once the process is gone
	}
	return ParseTpgid(g.buf[:n])
}

// Close releases what Get keeps open.
func (g *Foreground) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.f != nil {
		g.f.Close()
		g.f = nil
	}
	return nil
}

// MemfdCreate makes an anonymous file in memory, close-on-exec, that can
// be sealed: to be mapped by more than one process.
func MemfdCreate(name string) (int, error) {
	return unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
}

// sizeSeals keep every side from resizing shared memory under the others:
// a mapping past the end of a shrunk memfd faults (SIGBUS).
const sizeSeals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL

// SealSize seals memfd fd at its size, for good.
func SealSize(fd int) error {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, sizeSeals)
	return err
}

// SealedAtSize reports whether fd is a memfd SealSize sealed.
func SealedAtSize(fd int) bool {
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	return err == nil && seals&sizeSeals == sizeSeals
}

// Signal sends sig to the process at pid only if it is still the one
// started at start (Proc.Start; 0: whatever runs there). The pid is pinned
// with a pidfd before its start time is read, so a process that ends and
// whose pid comes round again to another program between the look and
// the signal is not signalled: the pidfd names the one that ended, and
// the signal fails with ESRCH. Without pidfds (Linux before 5.3) the
// look and the kill are two steps, as on other systems.
func Signal(pid int, start uint64, sig syscall.Signal) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return syscall.ESRCH
		}
		return signalAfterLook(pid, start, sig)
	}
	defer unix.Close(fd)
	if p, ok := Stat(pid); !ok || (start != 0 && p.Start != start) {
		return syscall.ESRCH
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0)
}
