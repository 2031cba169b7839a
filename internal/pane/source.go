package pane

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/corral-dev/corral/internal/holder"
	"github.com/corral-dev/corral/internal/procs"
)

// Source is the terminal a pane's program runs on. Wherever it is — a PTY
// the daemon owns, a holder's PTY, a tmux pane — the pane asks it the same
// things, and nothing above the pane knows which it is.
//
// The program's output reaches the pane from the source's side: the pane
// reads a PTY it owns or shares, a holder sends frames, and an outside
// source (Open) hands it over through the pane's Feed.
type Source interface {
	// Write types exact bytes into the program's terminal, waiting while
	// the program does not read.
	Write(b []byte) (int, error)
	// Size is the terminal's size; SetSize changes it.
	Size() (cols, rows int, err error)
	SetSize(cols, rows int) error
	// Foreground is the terminal's foreground process group.
	Foreground() (int, error)
	// Unread says how many typed bytes the program has not read yet; an
	// error when the source cannot say (then nothing waits on it).
	Unread() (int, error)
	// Signal signals the program's processes.
	Signal(sig syscall.Signal) error
	// Close lets go of the terminal. An outside source's program runs on.
	Close() error
	// Kind names the source for people and scripts: "pty", "held",
	// "tmux".
	Kind() string
}

// ErrFixedSize is the error of SetSize on a terminal whose size belongs to
// someone else (a tmux pane follows its window).
var ErrFixedSize = errors.New("the pane's size is set by the terminal it runs in")

// ptySource is a PTY the daemon owns: the program is its child.
type ptySource struct {
	*master
	// group finds every process the program started, wherever it went.
	group procs.Group
}

func (s *ptySource) Kind() string { return "pty" }

func (s *ptySource) Signal(sig syscall.Signal) error {
	// Processes that left the group (setsid, their own group) too: found
	// first, while they are still below the program.
	s.group.Signal(sig)
	if err := s.group.SignalGroup(sig); err != nil {
		return err
	}
	// A stopped group (SIGSTOP, Ctrl-Z) holds every signal but SIGKILL
	// until it runs again: wake it so the signal lands.
	if sig != syscall.SIGKILL && sig != syscall.SIGSTOP && sig != syscall.SIGTSTP && sig != syscall.SIGCONT && sig != 0 {
		return s.group.SignalGroup(syscall.SIGCONT)
	}
	return nil
}

// heldSource is a holder's PTY: the holder is the program's parent and
// signals it.
type heldSource struct {
	*master
	hc *holder.Conn
}

func (s *heldSource) Kind() string { return "held" }

func (s *heldSource) Signal(sig syscall.Signal) error {
	// The holder finds and signals every process of the pane.
	if err := s.hc.Kill(sig); err != nil {
		return fmt.Errorf("signal the pane through its holder: %w", err)
	}
	return nil
}

// The PTY operations both PTY sources share.

func (m *master) Size() (int, int, error) {
	ws, err := getSize(m)
	if err != nil {
		return 0, 0, err
	}
	return int(ws.Col), int(ws.Row), nil
}

func (m *master) SetSize(cols, rows int) error { return setSize(m, cols, rows) }

func (m *master) Foreground() (int, error) { return foregroundPgrp(m) }

func (m *master) Unread() (int, error) { return unreadInput(m) }

func (m *master) Pending() (int, error) { return pendingOutput(m) }

// pendingSource is a source that can say how much the program wrote that
// has not been read from its terminal yet (a PTY's master: osproc.
// OutputQueued). A pane starved of the processor, or whose reader waits
// its turn, has output in the kernel that its last output time does not
// count yet. A held pane whose holder reads the terminal and sends frames
// counts what the holder has not read; frames in the holder's socket are
// not counted.
type pendingSource interface {
	Pending() (int, error)
}
