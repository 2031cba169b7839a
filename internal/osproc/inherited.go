package osproc

import "syscall"

// CloseOnExecInherited marks every descriptor above stderr close-on-exec.
// The daemon is started from a user's shell, an editor or a CI runner,
// and inherits whatever they left open without close-on-exec; Go passes
// those on to every program it starts, so each pane's program would get
// them. corral's own descriptors are close-on-exec already.
func CloseOnExecInherited() {
	fds, _ := OpenFDs()
	for _, fd := range fds {
		if fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
