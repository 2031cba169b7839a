package pane

import (
	"fmt"
	"os"

	"github.com/corral-dev/corral/internal/osproc"
	"golang.org/x/sys/unix"
)

// nonBlocking replaces the PTY master with a non-blocking duplicate.
// NOTE: pty.Start returns the master in blocking mode, so read deadlines
// are ignored and Close does not unblock a pending Read. Later ioctls go
// through SyscallConn().Control, never Fd() (which would make it blocking
// again). The duplicate is close-on-exec: a plain dup would be inherited
// by every later pane's program, which could then type into this pane and
// read its output, and would keep it open after the daemon dies.
func nonBlocking(m *os.File) (int, error) {
	fd, err := unix.FcntlInt(m.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		m.Close()
		return -1, fmt.Errorf("dup pty: %w", err)
	}
	m.Close()
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("pty non-blocking: %w", err)
	}
	return fd, nil
}

// newPTYFile makes a non-blocking terminal master a file in the runtime's
// poller.
func newPTYFile(fd int) *os.File { return os.NewFile(uintptr(fd), "/dev/ptmx") }

func setSize(m *master, cols, rows int) error {
	return m.control(func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)})
	})
}

// foregroundPgrp returns the terminal's foreground process group.
func foregroundPgrp(m *master) (int, error) {
	var pgrp int
	err := m.control(func(fd int) error {
		var err error
		pgrp, err = unix.IoctlGetInt(fd, unix.TIOCGPGRP)
		return err
	})
	return pgrp, err
}

// processInfo reads a process's name and argv.
func processInfo(pid int) (name string, argv []string) {
	argv, _ = osproc.Cmdline(pid)
	return osproc.Name(pid), argv
}

// unreadInput returns how many bytes of its input the program has not yet
// read from its terminal. It asks through a short-lived descriptor of the
// terminal's own side, never kept: a held descriptor would keep the
// terminal open after the program exits.
func unreadInput(m *master) (int, error) {
	var n int
	err := m.control(func(fd int) error {
		peer, err := osproc.OpenPeer(fd, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK)
		if err != nil {
			return err
		}
		defer unix.Close(peer)
		n, err = osproc.InputQueued(peer)
		return err
	})
	return n, err
}

// pendingOutput says how many bytes the program wrote that the master has
// not read yet: its terminal's output waiting in the kernel.
func pendingOutput(m *master) (int, error) {
	var n int
	err := m.control(func(fd int) error {
		var err error
		n, err = osproc.OutputQueued(fd)
		return err
	})
	return n, err
}
