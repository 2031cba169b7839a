package term

import (
	"fmt"

	"github.com/charmbracelet/x/ansi"
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

// installHandlers overrides the emulator's query answers (which it would
// write to a pipe and block on) with answers collected under t.mu, and
// registers the protocol taps. Handlers run while t.mu is held.
func (t *Terminal) installHandlers() {
	e := t.emu

	// DA1: primary device attributes. Any pending OSC 7501 query answer
	// must precede it: that order is how programs detect support.
	e.RegisterCsiHandler('c', func(params ansi.Params) bool {
		if n, _, _ := params.Param(0, 0); n != 0 {
			return false
		}
		t.flushStatusQueryLocked()
		t.reply("\x1b[?62;1;6;22c")
		return true
	})
	// DA2: secondary device attributes.
	e.RegisterCsiHandler(ansi.Command('>', 0, 'c'), func(params ansi.Params) bool {
		if n, _, _ := params.Param(0, 0); n != 0 {
			return false
		}
		t.flushStatusQueryLocked()
		t.reply("\x1b[>1;10;0c")
		return true
	})
	// DSR: operating status and cursor position.
	e.RegisterCsiHandler('n', func(params ansi.Params) bool {
		n, _, _ := params.Param(0, 0)
		switch n {
		case 5:
			t.reply("\x1b[0n")
		case 6:
			p := e.CursorPosition()
			t.reply(fmt.Sprintf("\x1b[%d;%dR", p.Y+1, p.X+1))
		default:
			return false
		}
		return true
	})
	// DECXCPR: extended cursor position.
	e.RegisterCsiHandler(ansi.Command('?', 0, 'n'), func(params ansi.Params) bool {
		if n, _, _ := params.Param(0, 0); n != 6 {
			return false
		}
		p := e.CursorPosition()
		t.reply(fmt.Sprintf("\x1b[?%d;%d;1R", p.Y+1, p.X+1))
		return true
	})
	// DECRQM: request a DEC private mode (CSI ? Pd $ p). We report the modes
	// the emulator tracks; unknown modes are "not recognised" (0).
	e.RegisterCsiHandler(ansi.Command('?', '$', 'p'), func(params ansi.Params) bool {
		n, _, ok := params.Param(0, 0)
		if !ok {
			return false
		}
		t.reply(fmt.Sprintf("\x1b[?%d;%d$y", n, t.decModeSettingLocked(n)))
		return true
	})
	// DECRQM for ANSI modes (CSI Pa $ p).
	e.RegisterCsiHandler(ansi.Command(0, '$', 'p'), func(params ansi.Params) bool {
		n, _, ok := params.Param(0, 0)
		if !ok {
			return false
		}
		t.reply(fmt.Sprintf("\x1b[%d;0$y", n))
		return true
	})
	// XTVERSION: CSI > 0 q → DCS > | name ST.
	e.RegisterCsiHandler(ansi.Command('>', 0, 'q'), func(params ansi.Params) bool {
		if n, _, _ := params.Param(0, 0); n != 0 {
			return false
		}
		t.reply("\x1bP>|" + XTVersion + "\x1b\\")
		return true
	})
	// Kitty keyboard protocol query: CSI ? u → CSI ? flags u. We support no
	// progressive enhancements, and say so.
	e.RegisterCsiHandler(ansi.Command('?', 0, 'u'), func(params ansi.Params) bool {
		t.reply("\x1b[?0u")
		return true
	})
	// OSC 10/11/12 colour queries are answered by the emulator, which
	// writes to its pipe; route them here instead so they keep their order.
	for _, cmd := range []int{10, 11, 12} {
		e.RegisterOscHandler(cmd, func(data []byte) bool {
			body := oscBody(data)
			if body != "?" {
				return false // a colour being set: let the emulator handle it
			}
			t.reply(fmt.Sprintf("\x1b]%d;%s\x1b\\", cmd, defaultColour(cmd)))
			return true
		})
	}
	// DECSTBM: the emulator does not clamp the bottom margin to the screen
	// and indexes past its buffer later (CSI ;7 r on a 5-row screen, then
	// CSI L). xterm clamps; the emulator keeps no public way to set margins,
	// so an out-of-range bottom is clamped by rewriting the parameter the
	// emulator's own handler reads next (it runs after this one).
	e.RegisterCsiHandler('r', func(params ansi.Params) bool {
		if len(params) >= 2 {
			if b, _, ok := params.Param(1, 0); ok && b > e.Height() {
				params[1] = ansi.Param(e.Height())
			}
		}
		return false
	})
	// ST as an escape sequence (ESC \) follows an OSC ended by ESC.
	e.RegisterEscHandler('\\', func() bool {
		if t.statusQueryPending {
			t.answerStatusQueryLocked("\x1b\\")
		}
		return true
	})

	t.installTaps()
	t.installLimits()
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
// reset: the emulator draws every frame as it comes.
func (t *Terminal) decModeSettingLocked(mode int) int {
	switch mode {
	case 2026, 2027, 2031, 2048:
		return 2
	case 1049, 47, 1047:
		if t.emu.IsAltScreen() {
			return 1
		}
		return 2
	case 25:
		if t.emu.CursorHidden() {
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
