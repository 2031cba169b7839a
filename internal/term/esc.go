package term

// C0 and C1 controls, and ESC sequences.

import (
	"github.com/charmbracelet/x/ansi"
)

// execute runs a C0 or C1 control.
func (e *emulator) execute(b byte) {
	e.flush()
	switch b {
	case ansi.BEL:
		e.t.events = append(e.t.events, Event{Kind: EventBell})
	case ansi.BS:
		e.moveCursor(-1, 0)
	case ansi.HT:
		e.nextTab(1)
	case ansi.LF, ansi.VT, ansi.FF:
		e.linefeed()
	case ansi.CR:
		e.carriageReturn()
	case ansi.HTS:
		e.tabSet()
	case ansi.RI:
		e.reverseIndex()
	case ansi.IND:
		e.index()
	case ansi.SS2:
		e.gsingle = 2
	case ansi.SS3:
		e.gsingle = 3
	}
}

// esc runs an ESC sequence.
func (e *emulator) esc(cmd ansi.Cmd) {
	e.flush()
	t := e.t
	if inter := cmd.Intermediate(); inter != 0 {
		e.designateCharset(inter, cmd.Final())
		return
	}
	if cmd.Prefix() != 0 {
		return
	}
	switch cmd.Final() {
	case '7':
		e.scr.saved = e.scr.cur
	case '8':
		e.scr.cur = e.scr.saved
		e.penOK = false
	case 'D':
		e.index()
	case 'H':
		e.tabSet()
	case 'M':
		e.reverseIndex()
	case 'c':
		t.title = ""
		t.statusQueryPending = false
		t.emit(Event{Kind: EventReset})
		e.fullReset()
	case 'n':
		e.gl = 2
	case 'o':
		e.gl = 3
	case '|':
		e.gr = 3
	case '}':
		e.gr = 2
	case '~':
		e.gr = 1
	case '\\':
		if t.statusQueryPending {
			t.answerStatusQueryLocked("\x1b\\")
		}
	}
}

// designateCharset is SCS (ESC ( F, ESC ) F, ESC * F, ESC + F): the
// character set of G0 to G3.
func (e *emulator) designateCharset(inter, final byte) {
	set := int(inter) - '('
	if set < 0 || set > 3 {
		return
	}
	switch final {
	case 'A':
		e.charsets[set] = 1
	case 'B':
		e.charsets[set] = 0
	case '0':
		e.charsets[set] = 2
	}
}
