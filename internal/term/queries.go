package term

import (
	"github.com/charmbracelet/x/ansi/parser"
)

// XTVersion is the name corral gives when a program asks which terminal it
// runs in (XTVERSION, CSI > 0 q).
const XTVersion = "corral"

// StatusQuery is the body of the OSC 7501 feature query.
const StatusQuery = "?"

func init() {
	// NOTE: the shared ansi transition table ends an OSC or DCS string on the
	// byte 0x9C (C1 ST). In UTF-8 that byte is a continuation byte: "✳" is
	// E2 9C B3, so a title like "✳ Claude Code" was cut at its first byte and
	// the rest printed onto the screen. Terminals in UTF-8 mode treat the
	// byte as data; so do we. ESC \ and BEL still end the string.
	parser.Table.AddOne(0x9C, parser.OscStringState, parser.PutAction, parser.OscStringState)
	parser.Table.AddOne(0x9C, parser.DcsStringState, parser.PutAction, parser.DcsStringState)
}

func (t *Terminal) reply(s string) { t.replies = append(t.replies, s...) }

// flushStatusQueryLocked answers a pending OSC 7501 query before another
// reply is written. A query still pending here ended in BEL or a bare ESC.
func (t *Terminal) flushStatusQueryLocked() {
	if t.statusQueryPending {
		t.answerStatusQueryLocked("\a")
	}
}

func (t *Terminal) answerStatusQueryLocked(terminator string) {
	t.statusQueryPending = false
	t.reply("\x1b]7501;" + StatusQuery + terminator)
}

// decModeSettingLocked reports a DEC private mode for DECRQM: 1 set, 2
// reset, 0 not recognised. Synchronized output (2026) is recognised and
// reset: the screen draws every frame as it comes.
func (t *Terminal) decModeSettingLocked(mode int) int {
	switch mode {
	case 2026, 2027, 2031, 2048:
		return 2
	case 1049, 47, 1047:
		if t.emu.scr == &t.emu.alt {
			return 1
		}
		return 2
	case 25:
		if t.emu.scr.cur.hidden {
			return 2
		}
		return 1
	}
	return 0
}

func defaultColour(cmd int) string {
	switch cmd {
	case 11:
		return "rgb:0000/0000/0000"
	default:
		return "rgb:ffff/ffff/ffff"
	}
}

// oscBody returns what follows "NUMBER;" in an OSC's data.
func oscBody(data []byte) string {
	for i, b := range data {
		if b == ';' {
			return string(data[i+1:])
		}
	}
	return ""
}
