// Package tty is corral's use of a terminal: raw mode that always comes
// back, and the size, through golang.org/x/term.
package tty

import "golang.org/x/term"

// IsTerminal reports whether fd is a terminal.
func IsTerminal(fd int) bool { return term.IsTerminal(fd) }

// Raw puts the terminal on fd in raw mode and returns a function that
// restores it. Without a terminal it does nothing.
func Raw(fd int) func() {
	old, err := term.MakeRaw(fd)
	if err != nil {
		return func() {}
	}
	return func() { _ = term.Restore(fd, old) }
}

// Size returns the terminal's size, or ok false.
func Size(fd int) (cols, rows int, ok bool) {
	cols, rows, err := term.GetSize(fd)
	if err != nil || cols == 0 || rows == 0 {
		return 0, 0, false
	}
	return cols, rows, true
}
