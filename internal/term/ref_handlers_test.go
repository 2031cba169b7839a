package term

import (
	"fmt"
	"image/color"
	"strconv"
	"strings"
	"unicode/utf8"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
)

// installHandlers overrides the emulator's query answers (which it would
// write to a pipe and block on) with answers collected under t.mu, and
// registers the protocol taps. Handlers run while t.mu is held.
func (t *refTerminal) installHandlers() {
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

func (t *refTerminal) reply(s string) { t.replies = append(t.replies, s...) }

// flushStatusQueryLocked answers a pending OSC 7501 query before another
// reply is written. A query still pending here ended in BEL or a bare ESC.
func (t *refTerminal) flushStatusQueryLocked() {
	if t.statusQueryPending {
		t.answerStatusQueryLocked("\a")
	}
}

func (t *refTerminal) answerStatusQueryLocked(terminator string) {
	t.statusQueryPending = false
	t.reply("\x1b]7501;" + StatusQuery + terminator)
}

// decModeSettingLocked reports a DEC private mode for DECRQM: 1 set, 2
// reset, 0 not recognised. Synchronized output (2026) is recognised and
// reset: the emulator draws every frame as it comes.
func (t *refTerminal) decModeSettingLocked(mode int) int {
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

func (t *refTerminal) emit(ev Event) { t.events = append(t.events, ev) }

func (t *refTerminal) installTaps() {
	e := t.emu
	e.RegisterOscHandler(7501, func(data []byte) bool {
		body := oscBody(data)
		// ESC ] + data + at least a one-byte terminator.
		if 2+len(data)+1 > MaxStatusSequence {
			t.emit(Event{Kind: EventStatus, Oversize: true})
			return true
		}
		if body == StatusQuery {
			t.flushStatusQueryLocked()
			t.statusQueryPending = true
			return true
		}
		t.emit(Event{Kind: EventStatus, Text: body})
		return true
	})
	for _, cmd := range []int{0, 2} {
		e.RegisterOscHandler(cmd, func(data []byte) bool {
			// The emulator's own handler drops titles that contain ';'.
			t.title = clipText(oscBody(data), MaxTitle)
			t.emit(Event{Kind: EventTitle, Text: t.title})
			return true
		})
	}
	e.RegisterOscHandler(1, func([]byte) bool { return true }) // icon name: not kept
	e.RegisterOscHandler(9, func(data []byte) bool {
		body := oscBody(data)
		if rest, ok := strings.CutPrefix(body, "4;"); ok {
			t.emit(parseProgress(rest))
			return true
		}
		t.emit(Event{Kind: EventNotify, NotifySource: "9", Text: clipText(body, MaxNotifyText)})
		return true
	})
	e.RegisterOscHandler(777, func(data []byte) bool {
		parts := strings.SplitN(oscBody(data), ";", 3)
		if len(parts) >= 2 && parts[0] == "notify" {
			ev := Event{Kind: EventNotify, NotifySource: "777", NotifyTitle: clipText(parts[1], MaxTitle)}
			if len(parts) == 3 {
				ev.Text = clipText(parts[2], MaxNotifyText)
			}
			t.emit(ev)
		}
		return true
	})
	e.RegisterOscHandler(99, func(data []byte) bool {
		_, payload, _ := strings.Cut(oscBody(data), ";") // META;PAYLOAD
		t.emit(Event{Kind: EventNotify, NotifySource: "99", Text: clipText(payload, MaxNotifyText)})
		return true
	})
	e.RegisterOscHandler(133, func(data []byte) bool {
		body := oscBody(data)
		if body == "" {
			return true
		}
		ev := Event{Kind: EventPromptMark, Mark: body[0], ExitCode: -1}
		if ev.Mark == 'D' {
			if rest, ok := strings.CutPrefix(body, "D;"); ok {
				code, _, _ := strings.Cut(rest, ";")
				if n, err := strconv.Atoi(code); err == nil {
					ev.ExitCode = n
				}
			}
		}
		t.emit(ev)
		return true
	})
	// RIS: tap it, then let the emulator reset (returning false falls
	// through to its own handler).
	e.RegisterEscHandler('c', func() bool {
		t.title = ""
		t.rowsValid = false
		t.statusQueryPending = false
		t.emit(Event{Kind: EventReset})
		return false
	})
}

// Count parameters are clamped before the emulator sees them. The emulator
// loops once per count: "CSI 999999999 X" (erase characters) took seconds,
// and "CSI 999999999 b" (repeat the last character) never finished — ten
// bytes from a pane would stall its reader. Counts beyond the screen change
// nothing visible, so they are cut to what the screen can show.
func (t *refTerminal) installLimits() {
	e := t.emu
	perLine := func() int { return max(e.Width(), e.Height()) }
	perScreen := func() int { return e.Width() * (e.Height() + 1) }
	clampFirst := func(limit func() int) func(ansi.Params) bool {
		return func(params ansi.Params) bool {
			if len(params) > 0 {
				if n, _, ok := params.Param(0, 0); ok && n > limit() {
					params[0] = ansi.Param(limit())
				}
			}
			return false // on to the emulator's own handler
		}
	}
	// Cursor moves, erases, inserts, deletes, scrolls and tabs: at most a
	// screen's width or height.
	for _, final := range []byte{'@', 'A', 'B', 'C', 'D', 'E', 'F', 'I', 'L', 'M', 'P', 'S', 'T', 'X', 'Z', 'a', 'e', '`', 'G', 'd'} {
		e.RegisterCsiHandler(int(final), clampFirst(perLine))
	}
	// Repeat the last character: past a screenful and a line, every further
	// line of repeats only scrolls a full line of the same character, so
	// whole lines are dropped and the visible screen stays exact.
	e.RegisterCsiHandler('b', func(params ansi.Params) bool {
		if len(params) > 0 {
			if n, _, ok := params.Param(0, 0); ok && n > perScreen() {
				params[0] = ansi.Param(perScreen() + (n-perScreen())%e.Width())
			}
		}
		return false
	})
}

// sanitizeLocked makes the bytes valid UTF-8 before the emulator sees them.
// NOTE: the emulator's parser, in the middle of a multi-byte character,
// takes the next byte as part of it whatever it is: a lead byte left alone
// by garbage output swallowed the ESC after it, and with it the reset a
// program sent to recover ("\xd3" then "ESC c" printed "c" and lost the
// reset). Raw C1 bytes (0x80–0x9F) are not controls in a UTF-8 terminal
// either. So every byte that is not part of a valid character becomes
// U+FFFD; a character split across two writes is held until it completes.
func (t *refTerminal) sanitizeLocked(p []byte) []byte {
	if len(t.utf8Tail) == 0 && utf8.Valid(p) {
		return p
	}
	buf := append(t.utf8Tail, p...)
	t.utf8Tail = nil
	out := make([]byte, 0, len(buf)+8)
	for i := 0; i < len(buf); {
		c := buf[i]
		if c < utf8.RuneSelf {
			out = append(out, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(buf[i:])
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(buf[i:]) {
				// An incomplete character at the end: wait for the rest.
				t.utf8Tail = append([]byte(nil), buf[i:]...)
				break
			}
			out = append(out, "\uFFFD"...)
			i++
			continue
		}
		out = append(out, buf[i:i+size]...)
		i += size
	}
	return out
}

// StyledRows copies the visible screen as styled runs, one slice per row,
// trailing default-styled blanks removed.
func (t *refTerminal) StyledRows() [][]Run {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.frozen; f != nil {
		out := make([][]Run, len(f.styled))
		for i, r := range f.styled {
			out[i] = append([]Run(nil), r...)
		}
		return out
	}
	cols, rows := t.emu.Width(), t.emu.Height()
	out := make([][]Run, rows)
	for y := range rows {
		var runs []Run
		var b strings.Builder
		var cur Run
		flush := func() {
			if b.Len() > 0 {
				cur.Text = b.String()
				runs = append(runs, cur)
				b.Reset()
			}
		}
		for x := 0; x < cols; x++ {
			c := t.emu.CellAt(x, y)
			if c == nil {
				continue
			}
			st := refStyleOf(c.Style)
			if st != cur {
				flush()
				cur = st
			}
			refWriteCell(&b, c)
		}
		flush()
		// Drop trailing blanks in the default style.
		for len(runs) > 0 {
			last := &runs[len(runs)-1]
			if last.BG != "" || last.Reverse || last.Underline {
				break
			}
			last.Text = strings.TrimRight(last.Text, " ")
			if last.Text != "" {
				break
			}
			runs = runs[:len(runs)-1]
		}
		out[y] = runs
	}
	return out
}

func refStyleOf(s uv.Style) Run {
	return Run{FG: refHex(s.Fg), BG: refHex(s.Bg), Bold: s.Attrs&uv.AttrBold != 0, Faint: s.Attrs&uv.AttrFaint != 0,
		Italic: s.Attrs&uv.AttrItalic != 0, Reverse: s.Attrs&uv.AttrReverse != 0, Underline: s.Underline != 0}
}

func refHex(c color.Color) string {
	if c == nil {
		return ""
	}
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}
