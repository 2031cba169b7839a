package term

// A checkpoint: the escape sequences that redraw a terminal from nothing.

import (
	"strconv"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi/parser"
)

// Checkpoint returns escape sequences that, written to a terminal of the
// same size (fresh, or one that has shown other things: they begin by
// resetting and erasing it with its history), make it what this one is: the history as text,
// both screens with their colours, the cursors and saved cursors, the
// scroll regions, the modes the emulator keeps and the title. Bytes this
// terminal is written after it then act on the copy as they act here.
//
// ok is false when the terminal is in a state a checkpoint does not
// reproduce: inside an escape sequence or a character, a wrap pending at
// the last column, origin mode, left and right margins, a character set
// or tab stops other than the defaults. Such states pass; the caller asks
// again after the next write.
func (t *Terminal) Checkpoint() (b []byte, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.frozen != nil || t.emu == nil || len(t.utf8Tail) > 0 || t.statusQueryPending {
		return nil, false
	}
	e := t.emu
	if e.p.State() != parser.GroundState || len(e.pend) > 0 || e.phantom || e.origin || e.lrmm ||
		e.gl != 0 || e.gr != 1 || e.gsingle != 0 || e.charsets != [4]uint8{} || !defaultTabStops(e.tabs) {
		return nil, false
	}
	for _, s := range []*screen{&e.main, &e.alt} {
		if s.left != 0 || s.right != e.cols {
			return nil, false
		}
	}
	defer e.peek()()

	// Not a full reset (RIS): that also says the program's status
	// reports are void, and the reports stay with whoever replays this.
	b = make([]byte, 0, len(resetForCheckpoint)+e.sb.size()+2*e.sb.len()+2*e.rows*e.cols+256)
	b = append(b, resetForCheckpoint...)
	// History: each row printed and scrolled off the top.
	if n := e.sb.len(); n > 0 {
		text, starts := e.sb.view()
		for i := range n {
			b = append(b, historyLine(text, starts, i)...)
			b = append(b, '\r', '\n')
		}
		b = cup(b, e.rows-1, 0)
		for range min(n, e.rows-1) {
			b = append(b, '\n')
		}
	}
	alt := e.scr == &e.alt
	if !alt {
		// The alternate screen keeps its saved cursor and scroll region
		// while it is not shown, for the next time it is.
		b = append(b, "\x1b[?1047h"...)
		b = e.appendSaved(b, &e.alt)
		b = append(b, "\x1b[?1047l"...)
	}
	b = e.appendScreen(b, &e.main)
	if alt {
		// Entered as a program enters it, the main cursor copied: with
		// the main pen, which the main screen keeps for when the program
		// leaves, and which cleared the alternate screen with its
		// background; cleared again with the default pen.
		b = append(b, "\x1b[?1047h\x1b[0m\x1b[2J"...)
		b = e.appendScreen(b, &e.alt)
	}
	if !e.autowrap {
		b = append(b, "\x1b[?7l"...)
	} else {
		b = append(b, "\x1b[?7h"...)
	}
	if e.lnm {
		b = append(b, "\x1b[20h"...)
	}
	if e.inBand {
		b = append(b, "\x1b[?2048h"...)
	}
	b = append(b, "\x1b]2;"...)
	b = append(b, t.title...)
	b = append(b, '\a')
	return b, true
}

// resetForCheckpoint brings a terminal that has shown anything back to
// the state a checkpoint draws on: the main screen, erased with its
// history, no link, margins, origin mode or character set, the default modes,
// and no wrap at the right edge while the history is printed.
const resetForCheckpoint = "\x1b[0m\x1b]8;;\a\x1b[?1049l\x1b[?6l\x1b[?69l\x1b[r\x1b(B\x1b[20l\x1b[?2048l\x1b[H\x1b[3J\x1b[?7l"

// appendScreen draws screen s (made current before: the main one after
// the reset, the alternate one on entering it), then its saved cursor,
// scroll region, cursor, pen and the cursor's visibility.
func (e *emulator) appendScreen(b []byte, s *screen) []byte {
	// The SGR of each style index met, once a checkpoint.
	sgrs := make(map[uint16]string)
	// The pen drawn before (the main screen's, before the alternate
	// one) may hold a link: none to start with.
	b = e.appendLink(b, 0)
	var link uint16
	for y, l := range s.lines {
		if len(l) == 0 {
			continue
		}
		b = cup(b, y, 0)
		b = append(b, "\x1b[0m"...)
		pen := uint16(0)
		for _, c := range l {
			if c.r == 0 && c.w == 0 {
				continue // the right half of a wide character
			}
			if c.st != pen {
				b = append(b, "\x1b[0m"...)
				sgr, ok := sgrs[c.st]
				if !ok {
					st, _ := e.uvStyle(c.st)
					if !st.IsZero() {
						sgr = st.String()
					}
					sgrs[c.st] = sgr
				}
				b = append(b, sgr...)
				pen = c.st
			}
			if l := e.linkOf(c.st); l != link {
				b = e.appendLink(b, l)
				link = l
			}
			b = e.appendCell(b, c)
		}
	}
	if link != 0 {
		b = e.appendLink(b, 0)
	}
	b = e.appendSaved(b, s)
	b = cup(b, s.cur.y, s.cur.x)
	b = e.appendPen(b, s.cur.pen)
	return appendHidden(b, s.cur.hidden)
}

// appendSaved sets screen s's saved cursor and scroll region (DECSTBM
// homes the cursor).
func (e *emulator) appendSaved(b []byte, s *screen) []byte {
	b = cup(b, s.saved.y, s.saved.x)
	b = e.appendPen(b, s.saved.pen)
	b = appendHidden(b, s.saved.hidden)
	b = append(b, "\x1b7"...)
	return appendRegion(b, s)
}

func appendRegion(b []byte, s *screen) []byte {
	b = append(b, "\x1b["...)
	b = strconv.AppendInt(b, int64(s.top+1), 10)
	b = append(b, ';')
	b = strconv.AppendInt(b, int64(s.bottom), 10)
	return append(b, 'r')
}

func (e *emulator) appendPen(b []byte, pen style) []byte {
	b = append(b, "\x1b[0m"...)
	st := uv.Style{Fg: pen.fg.color(), Bg: pen.bg.color(), UnderlineColor: pen.ul.color(), Underline: pen.under, Attrs: pen.attrs}
	if !st.IsZero() {
		b = append(b, st.String()...)
	}
	return e.appendLink(b, e.penLink(pen))
}

// penLink is the hyperlink of a pen (0: none).
func (e *emulator) penLink(pen style) uint16 {
	if int(pen.link) < len(e.links) {
		return pen.link
	}
	return 0
}

// linkOf is the hyperlink of style index i (0: none).
func (e *emulator) linkOf(i uint16) uint16 {
	if int(i) >= len(e.styles) {
		return 0
	}
	if l := e.styles[i].link; int(l) < len(e.links) {
		return l
	}
	return 0
}

// appendLink starts hyperlink l, or ends the one open when l is 0 (OSC 8).
func (e *emulator) appendLink(b []byte, l uint16) []byte {
	b = append(b, "\x1b]8;"...)
	if l != 0 {
		b = append(b, e.links[l].params...)
		b = append(b, ';')
		b = append(b, e.links[l].url...)
	} else {
		b = append(b, ';')
	}
	return append(b, '\a')
}

func appendHidden(b []byte, hidden bool) []byte {
	if hidden {
		return append(b, "\x1b[?25l"...)
	}
	return append(b, "\x1b[?25h"...)
}

// cup moves the cursor to row y, column x (zero-based).
func cup(b []byte, y, x int) []byte {
	b = append(b, "\x1b["...)
	b = strconv.AppendInt(b, int64(y+1), 10)
	b = append(b, ';')
	b = strconv.AppendInt(b, int64(x+1), 10)
	return append(b, 'H')
}

func defaultTabStops(tabs []bool) bool {
	for x, set := range tabs {
		if set != (x%8 == 0) {
			return false
		}
	}
	return true
}
