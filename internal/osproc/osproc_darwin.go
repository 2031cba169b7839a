package osproc

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func fromKinfo(k *unix.KinfoProc) Proc {
	pid := int(k.Proc.P_pid)
	p := Proc{PID: pid, PPID: int(k.Eproc.Ppid), PGID: int(k.Eproc.Pgid), State: stateLetter(k.Proc.P_stat)}
	if st := k.Proc.P_starttime; st.Sec > 0 {
		p.Start = uint64(st.Sec)*1e6 + uint64(st.Usec)
	}
	// kinfo_proc names the session only by a kernel address.
	if sid, err := unix.Getsid(pid); err == nil {
		p.SID = sid
	}
	return p
}

// kinfo returns process pid's kinfo_proc (sysctl kern.proc.pid.PID). A
// pid nobody has reads back empty, which x/sys/unix reports as EIO.
func kinfo(pid int) (*unix.KinfoProc, error) {
	if pid <= 0 {
		return nil, noProcess(pid, syscall.ESRCH)
	}
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return nil, noProcess(pid, err)
	}
	if int(k.Proc.P_pid) != pid {
		return nil, noProcess(pid, syscall.ESRCH)
	}
	return k, nil
}

// Table reads every process's parent, group, session and state (sysctl
// kern.proc.all).
func Table() map[int]Proc {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return map[int]Proc{}
	}
	out := make(map[int]Proc, len(kps))
	for i := range kps {
		p := fromKinfo(&kps[i])
		out[p.PID] = p
	}
	return out
}

// PIDs lists every process.
func PIDs() []int {
	kps, _ := unix.SysctlKinfoProcSlice("kern.proc.all")
	pids := make([]int, 0, len(kps))
	for i := range kps {
		pids = append(pids, int(kps[i].Proc.P_pid))
	}
	return pids
}

// Stat reads one process's line of the table (ok false: no such process).
func Stat(pid int) (Proc, bool) {
	k, err := kinfo(pid)
	if err != nil {
		return Proc{}, false
	}
	return fromKinfo(k), true
}

// Owner returns the user a process runs as (ok false: no such process).
func Owner(pid int) (uid int, ok bool) {
	k, err := kinfo(pid)
	if err != nil {
		return 0, false
	}
	return int(k.Eproc.Ucred.Uid), true
}

// procArgs reads sysctl kern.procargs2.PID (parseProcArgs). Only the
// caller's own processes (or root's) can be read.
func procArgs(pid int) (argv, env []string, err error) {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		return nil, nil, noProcess(pid, err)
	}
	argv, env, err = parseProcArgs(b)
	if err != nil {
		return nil, nil, noProcess(pid, err)
	}
	return argv, env, nil
}

// Environ returns process pid's environment as it was when it started.
func Environ(pid int) ([]string, error) {
	_, env, err := procArgs(pid)
	return env, err
}

// Cmdline returns process pid's argv.
func Cmdline(pid int) ([]string, error) {
	argv, _, err := procArgs(pid)
	return argv, err
}

// Name returns the kernel's short name of process pid (p_comm, its
// executable's base name cut to 16 bytes), "" when it cannot be read.
func Name(pid int) string {
	k, err := kinfo(pid)
	if err != nil {
		return ""
	}
	return unix.ByteSliceToString(k.Proc.P_comm[:])
}

var selfExe = func() string {
	if exe, err := os.Executable(); err == nil {
		return exe
	}
	return os.Args[0]
}()

// SelfExe is the path that runs this very binary: where it was started
// from (macOS has no /proc/self/exe; a binary replaced since runs the new
// one).
func SelfExe() string { return selfExe }

// Subreaper fails: macOS has no child subreaper.
func Subreaper() error { return ErrNoSubreaper }

// WaitExit blocks until process pid (a child of the caller) has exited,
// without collecting its status: the caller's Wait still gets it. It
// waits on a kqueue (EVFILT_PROC, NOTE_EXIT) in the runtime's poller, so
// a running child holds no OS thread; where that fails, in a blocking
// kevent, and last by looking at the process table.
func WaitExit(pid int) {
	kq, err := unix.Kqueue()
	if err != nil {
		pollExit(pid)
		return
	}
	unix.CloseOnExec(kq)
	var change [1]unix.Kevent_t
	unix.SetKevent(&change[0], pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	change[0].Fflags = unix.NOTE_EXIT
	if _, err := unix.Kevent(kq, change[:], nil, nil); err != nil {
		unix.Close(kq)
		if errors.Is(err, unix.ESRCH) {
			return // exited already (a zombie) or never there
		}
		pollExit(pid)
		return
	}
	if err := unix.SetNonblock(kq, true); err != nil {
		blockingKevent(kq)
		unix.Close(kq)
		return
	}
	// A kqueue reads as ready once an event is queued on it; it is
	// checked with a zero timeout before each wait, so an exit before
	// registration counts.
	f := os.NewFile(uintptr(kq), "kqueue")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		pollExit(pid)
		return
	}
	var kerr error
	err = rc.Read(func(fd uintptr) bool {
		var ev [1]unix.Kevent_t
		n, err := unix.Kevent(int(fd), nil, ev[:], &unix.Timespec{})
		switch {
		case err == unix.EINTR:
			return false
		case err != nil:
			kerr = err
			return true
		}
		return n > 0
	})
	if err != nil || kerr != nil {
		// Not in the poller: the same queue, waited on in this thread.
		_ = rc.Control(func(fd uintptr) { blockingKevent(int(fd)) })
	}
}

// blockingKevent waits without a timeout for kq's one event.
func blockingKevent(kq int) {
	for {
		var ev [1]unix.Kevent_t
		n, err := unix.Kevent(kq, nil, ev[:], nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n > 0 {
			return
		}
	}
}

// pollExit is WaitExit by looking at the process table, more and more
// seldom, up to every half second.
func pollExit(pid int) {
	wait := 5 * time.Millisecond
	for {
		if p, ok := Stat(pid); !ok || p.Zombie() {
			return
		}
		time.Sleep(wait)
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// OpenPeer opens the terminal side of the pseudo-terminal whose master is
// fd, by its path (TIOCPTYGNAME), with flags such as
// O_RDONLY|O_NOCTTY|O_NONBLOCK. The caller closes it: a held descriptor
// keeps the terminal open after its program exits.
func OpenPeer(master int, flags int) (int, error) {
	var name [128]byte // the size TIOCPTYGNAME writes
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(master), uintptr(unix.TIOCPTYGNAME), uintptr(unsafe.Pointer(&name[0]))); errno != 0 {
		return -1, fmt.Errorf("the pty's terminal name (TIOCPTYGNAME): %w", errno)
	}
	path := unix.ByteSliceToString(name[:])
	fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open the terminal side of the pty %s: %w", path, err)
	}
	return fd, nil
}

// fionread is FIONREAD of <sys/filio.h>, _IOR('f', 127, int), which
// x/sys/unix does not name for darwin.
const fionread = 0x4004667f

// InputQueued returns how many bytes typed into terminal fd wait to be
// read.
func InputQueued(fd int) (int, error) { return unix.IoctlGetInt(fd, fionread) }

// OutputQueued returns how many bytes the program wrote to its terminal
// that master, the pty's master, has not read yet: the terminal's output
// queue (TIOCOUTQ), which the master's reads drain. FIONREAD on a master
// would answer for the terminal's input queue, what was typed.
func OutputQueued(master int) (int, error) { return unix.IoctlGetInt(master, unix.TIOCOUTQ) }

// fread is FREAD of <sys/fcntl.h>: TIOCFLUSH's "the input queue".
const fread = 0x0001

// FlushInput discards what was typed into terminal fd and not yet read
// (tcflush(fd, TCIFLUSH)).
func FlushInput(fd int) error { return unix.IoctlSetPointerInt(fd, unix.TIOCFLUSH, fread) }

// The ioctl requests that read and set a terminal's termios.
const (
	GetTermios = unix.TIOCGETA
	SetTermios = unix.TIOCSETA
)

// PeerCred returns the user and process id of the process at the other
// end of unix socket fd (LOCAL_PEERCRED, LOCAL_PEERPID).
func PeerCred(fd int) (uid, pid int, err error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return 0, 0, fmt.Errorf("LOCAL_PEERCRED: %w", err)
	}
	pid, err = unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	if err != nil {
		return 0, 0, fmt.Errorf("LOCAL_PEERPID: %w", err)
	}
	return int(cred.Uid), pid, nil
}

// OpenFDs lists the descriptors this process holds.
func OpenFDs() ([]int, error) { return listFDs("/dev/fd") }

// Foreground reads, again and again, the foreground process group of the
// controlling terminal of one process (kinfo_proc's e_tpgid).
type Foreground struct{ pid int }

// NewForeground asks about process pid's terminal.
func NewForeground(pid int) *Foreground { return &Foreground{pid: pid} }

// Get returns the foreground process group (0: the process has no
// terminal), or an error once the process is gone.
func (g *Foreground) Get() (int, error) {
	if g.pid <= 0 {
		return 0, errors.New("no process")
	}
	k, err := kinfo(g.pid)
	if err != nil {
		return 0, err
	}
	return int(k.Eproc.Tpgid), nil
}

// Close releases nothing: Get keeps nothing open.
func (g *Foreground) Close() error { return nil }

// MemfdCreate fails: macOS has no memfds (shared memory that can be
// sealed at its size), so each process keeps its own copy.
func MemfdCreate(name string) (int, error) {
	return -1, fmt.Errorf("memfd %s: %w", name, errors.ErrUnsupported)
}

// SealSize fails: macOS has no memfds.
func SealSize(fd int) error { return errors.ErrUnsupported }

// SealedAtSize is false: macOS has no memfds.
func SealedAtSize(fd int) bool { return false }

// Signal sends sig to the process at pid only if it is still the one
// started at start (Proc.Start; 0: whatever runs there). macOS has no
// pidfd: the look and the kill are two steps, and a pid that comes round
// again between them (rare: it would have to be reused within that
// moment) would be signalled.
func Signal(pid int, start uint64, sig syscall.Signal) error {
	return signalAfterLook(pid, start, sig)
}
