package term

// CSI sequences (ESC [): csi dispatches on the prefix and intermediate
// byte, csiPlain on the final byte to a function per family (cursor, edit,
// erase, reports, margins). Modes are in modes.go, SGR in style.go.

import (
	"github.com/charmbracelet/x/ansi"
)

// csi dispatches a CSI sequence on its prefix and intermediate byte.
func (e *emulator) csi(cmd ansi.Cmd, params ansi.Params) {
	e.flush()
	final := cmd.Final()
	if e.testCsiHook != nil {
		e.testCsiHook(final)
	}
	switch cmd.Prefix() {
	case 0:
		switch cmd.Intermediate() {
		case 0:
			e.csiPlain(final, params)
		case '$':
			if final == 'p' {
				e.reportANSIMode(params)
			}
		}
	case '?':
		e.csiPrivate(cmd.Intermediate(), final, params)
	case '>':
		if cmd.Intermediate() == 0 {
			e.csiGreater(final, params)
		}
	}
}

// csiPlain dispatches a CSI sequence with neither prefix nor intermediate
// byte on its final byte, to its family.
func (e *emulator) csiPlain(final byte, params ansi.Params) {
	switch final {
	case 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'Z', '`', 'a', 'd', 'e', 'f':
		e.csiCursor(final, params)
	case '@', 'L', 'M', 'P', 'S', 'T':
		e.csiEdit(final, params)
	case 'J', 'K', 'X':
		e.csiErase(final, params)
	case 'b':
		e.repeatLast(params)
	case 'c', 'n':
		e.csiReport(final, params)
	case 'g':
		e.clearTabStops(params)
	case 'h':
		e.setModes(params, true, true)
	case 'l':
		e.setModes(params, false, true)
	case 'm':
		sgr(params, &e.scr.cur.pen)
		e.penOK = false
	case 'r':
		e.setTopBottomMargins(params)
	case 's':
		e.setLeftRightMargins(params)
	}
}

// csiPrivate dispatches a CSI sequence with the '?' prefix (DEC private).
func (e *emulator) csiPrivate(inter, final byte, params ansi.Params) {
	if inter == '$' {
		if final == 'p' {
			e.reportDECMode(params)
		}
		return
	}
	if inter != 0 {
		return
	}
	switch final {
	case 'h':
		e.setModes(params, true, false)
	case 'l':
		e.setModes(params, false, false)
	case 'n':
		if n, _, _ := params.Param(0, 0); n == 6 {
			e.t.reply("\x1b[?" + itoa(e.scr.cur.y+1) + ";" + itoa(e.scr.cur.x+1) + ";1R")
		}
	case 'u':
		e.t.reply("\x1b[?0u")
	case 'W':
		if len(params) == 1 && params[0] == 5 {
			e.tabs = defaultTabs(e.cols)
		}
	}
}

// csiGreater dispatches a CSI sequence with the '>' prefix: the secondary
// device attributes and the terminal's name and version.
func (e *emulator) csiGreater(final byte, params ansi.Params) {
	switch final {
	case 'c':
		if n, _, _ := params.Param(0, 0); n == 0 {
			e.t.flushStatusQueryLocked()
			e.t.reply("\x1b[>1;10;0c")
		}
	case 'q':
		if n, _, _ := params.Param(0, 0); n == 0 {
			e.t.reply("\x1bP>|" + XTVersion + "\x1b\\")
		}
	}
}

// perLine bounds counts whose effect cannot exceed a line or a column.
func (e *emulator) perLine() int { return max(e.cols, e.rows) }

// count is a sequence's first parameter taken as a count: 1 when missing,
// at most perLine.
func (e *emulator) count(params ansi.Params) int {
	n, _, _ := params.Param(0, 1)
	return min(n, e.perLine())
}

// csiCursor moves the cursor: CUU, CUD, CUF, CUB, CNL, CPL, CHA, CUP, CHT,
// CBT, HPA, HPR, VPA, VPR, HVP.
func (e *emulator) csiCursor(final byte, params ansi.Params) {
	s := e.scr
	switch final {
	case 'A':
		e.moveCursor(0, -e.count(params))
	case 'B':
		e.moveCursor(0, e.count(params))
	case 'C':
		e.moveCursor(e.count(params), 0)
	case 'D':
		e.moveCursor(-e.count(params), 0)
	case 'E':
		e.moveCursor(0, e.count(params))
		e.carriageReturn()
	case 'F':
		e.moveCursor(0, -e.count(params))
		e.carriageReturn()
	case 'G':
		e.goTo(e.count(params)-1, s.cur.y)
	case 'H', 'f':
		e.cursorPosition(final, params)
	case 'I':
		e.nextTab(e.count(params))
	case 'Z':
		e.prevTab(e.count(params))
	case '`':
		e.goToOrigin(min(e.cols-1, e.count(params)-1), s.cur.y)
	case 'a':
		e.goToOrigin(min(e.cols-1, s.cur.x+e.count(params)), s.cur.y)
	case 'd':
		e.goToOrigin(s.cur.x, min(e.rows-1, e.count(params)-1))
	case 'e':
		e.goToOrigin(s.cur.x, min(e.rows-1, s.cur.y+e.count(params)))
	}
}

// cursorPosition is CUP (CSI H), within the scroll region in origin mode,
// and HVP (CSI f), which ignores origin mode.
func (e *emulator) cursorPosition(final byte, params ansi.Params) {
	row, _, _ := params.Param(0, 1)
	col, _, _ := params.Param(1, 1)
	if final == 'H' {
		row, col = max(row, 1), max(col, 1)
	}
	y := min(e.rows-1, row-1)
	x := min(e.cols-1, col-1)
	if final == 'H' {
		e.goToOrigin(x, y)
	} else {
		e.goTo(x, y)
	}
}

// csiEdit inserts and deletes cells and lines, and scrolls: ICH, IL, DL,
// DCH, SU, SD.
func (e *emulator) csiEdit(final byte, params ansi.Params) {
	n := e.count(params)
	switch final {
	case '@':
		e.insertCell(n)
	case 'L':
		if e.insertLine(n) {
			e.setCursor(0, e.scr.cur.y, true)
		}
	case 'M':
		if e.deleteLine(n) {
			e.setCursor(0, e.scr.cur.y, true)
		}
	case 'P':
		e.deleteCell(n)
	case 'S':
		e.scrollUp(n)
	case 'T':
		e.scrollDown(n)
	}
}

// csiErase erases: ED, EL, ECH.
func (e *emulator) csiErase(final byte, params ansi.Params) {
	switch final {
	case 'J':
		n, _, _ := params.Param(0, 0)
		e.eraseDisplay(n)
	case 'K':
		n, _, _ := params.Param(0, 0)
		e.eraseLine(n)
	case 'X':
		e.eraseChars(e.count(params))
	}
}

// repeatLast is REP: the last character printed, n times more. A count
// past a screenful is cut to one that leaves the cursor in the same column.
func (e *emulator) repeatLast(params ansi.Params) {
	n, _, _ := params.Param(0, 1)
	if perScreen := e.cols * (e.rows + 1); n > perScreen {
		n = perScreen + (n-perScreen)%e.cols
	}
	if e.lastChar != 0 {
		for range n {
			e.printRune(e.lastChar)
		}
	}
}

// csiReport answers DA (CSI c) and DSR (CSI n): the primary device
// attributes, the terminal's status and the cursor's position.
func (e *emulator) csiReport(final byte, params ansi.Params) {
	s := e.scr
	switch final {
	case 'c':
		if n, _, _ := params.Param(0, 0); n == 0 {
			e.t.flushStatusQueryLocked()
			e.t.reply("\x1b[?62;1;6;22c")
		}
	case 'n':
		n, _, _ := params.Param(0, 0)
		switch n {
		case 5:
			e.t.reply("\x1b[0n")
		case 6:
			e.t.reply("\x1b[" + itoa(s.cur.y+1) + ";" + itoa(s.cur.x+1) + "R")
		}
	}
}

// clearTabStops is TBC: the stop at the cursor (0) or every stop (3).
func (e *emulator) clearTabStops(params ansi.Params) {
	n, _, _ := params.Param(0, 0)
	switch n {
	case 0:
		if x := e.scr.cur.x; x >= 0 && x < len(e.tabs) {
			e.tabs[x] = false
		}
	case 3:
		clear(e.tabs)
	}
}

// setTopBottomMargins is DECSTBM: the scroll region's rows. The cursor
// goes home.
func (e *emulator) setTopBottomMargins(params ansi.Params) {
	s := e.scr
	top, _, _ := params.Param(0, 1)
	top = max(top, 1)
	bottom, _, ok := params.Param(1, e.rows)
	if !ok {
		bottom = e.rows
	}
	bottom = min(bottom, e.rows)
	if bottom < 1 {
		bottom = e.rows
	}
	if top >= bottom {
		return
	}
	s.top, s.bottom = top-1, bottom
	e.goToOrigin(0, 0)
}

// setLeftRightMargins is DECSLRM, the scroll region's columns, in left
// and right margin mode (DECLRMM); outside it, CSI s is SCOSC, which saves
// the cursor.
func (e *emulator) setLeftRightMargins(params ansi.Params) {
	s := e.scr
	if !e.lrmm {
		s.saved = s.cur
		return
	}
	left, _, _ := params.Param(0, 1)
	left = max(left, 1)
	right, _, ok := params.Param(1, e.cols)
	if !ok {
		right = e.cols
	}
	if left >= right {
		return
	}
	// NOTE: the reference does not clamp the right margin to the screen
	// and then indexes past its rows; it is clamped here.
	right = min(right, e.cols)
	left = min(left, right)
	s.left, s.right = left-1, right
	e.goToOrigin(0, 0)
}

func itoa(n int) string {
	var buf [20]byte
	i := len(buf)
	neg := n < 0
	u := uint64(n)
	if neg {
		u = uint64(-n)
	}
	for {
		i--
		buf[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	if neg {
		i--
		buf[i] = '-'
	}
	return string(buf[i:])
}
