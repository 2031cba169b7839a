package tmuxctl

import (
	"fmt"
	"strconv"
	"strings"
)

// A pane's screen is captured with two commands on one line, on the
// connection that streams the pane's output:
//
//	capture-pane -p -e -N -t %N       the visible rows, with their colours
//	                                  and trailing blanks (which may be coloured)
//	display-message -p -t %N 'FMT'    the cursor and the modes below
//
// Commands on one line are queued together, so no output of the pane is
// read between them; and tmux writes a reply behind the output queued
// before it, so the %output lines before the capture's %begin are in the
// capture, and those after its %end are not.

// cursorFormat is what display-message reports of a pane, in the order of
// cursor's fields.
const cursorFormat = "#{cursor_x} #{cursor_y} #{alternate_on} #{cursor_flag} #{keypad_cursor_flag}" +
	" #{pane_width} #{pane_height} #{keypad_flag} #{insert_flag} #{wrap_flag} #{origin_flag}" +
	" #{scroll_region_upper} #{scroll_region_lower}" +
	" #{mouse_standard_flag} #{mouse_button_flag} #{mouse_any_flag} #{mouse_sgr_flag} #{mouse_utf8_flag}"

// cursor is a pane's cursor and modes, as display-message reports them.
type cursor struct {
	x, y          int
	alternate     bool
	visible       bool
	keypadCursor  bool // DECCKM: cursor keys send ESC O
	cols, rows    int
	keypad        bool // DECKPAM
	insert        bool // IRM
	wrap          bool // DECAWM
	origin        bool // DECOM
	upper, lower  int  // the scroll region, 0-based, inclusive
	mouseStandard bool // 1000
	mouseButton   bool // 1002
	mouseAny      bool // 1003
	mouseSGR      bool // 1006
	mouseUTF8     bool // 1005
}

// parseCursor parses display-message's line for cursorFormat.
func parseCursor(s string) (cursor, error) {
	f := strings.Fields(s)
	if len(f) != 18 {
		return cursor{}, fmt.Errorf("cursor report %q: want 18 fields", s)
	}
	n := make([]int, len(f))
	for i, v := range f {
		var err error
		if n[i], err = strconv.Atoi(v); err != nil || n[i] < 0 {
			return cursor{}, fmt.Errorf("cursor report %q: field %d is not a count", s, i+1)
		}
	}
	c := cursor{
		x: n[0], y: n[1], alternate: n[2] == 1, visible: n[3] == 1, keypadCursor: n[4] == 1,
		cols: n[5], rows: n[6], keypad: n[7] == 1, insert: n[8] == 1, wrap: n[9] == 1, origin: n[10] == 1,
		upper: n[11], lower: n[12],
		mouseStandard: n[13] == 1, mouseButton: n[14] == 1, mouseAny: n[15] == 1, mouseSGR: n[16] == 1, mouseUTF8: n[17] == 1,
	}
	if c.cols < 1 || c.rows < 1 {
		return cursor{}, fmt.Errorf("cursor report %q: pane of %dx%d", s, c.cols, c.rows)
	}
	return c, nil
}

// drawScreen returns the bytes that draw a captured pane on a blank
// terminal of its size: the alternate screen entered if the pane is in it
// (so that the program's later exit from it works), the rows with their
// colours, the modes, then the cursor.
func drawScreen(rows [][]byte, c cursor) []byte {
	if len(rows) > c.rows {
		rows = rows[:c.rows] // more would scroll the first away
	}
	n := 32
	for _, r := range rows {
		n += len(r) + 2
	}
	b := make([]byte, 0, n+64)
	if c.alternate {
		b = append(b, "\x1b[?1049h"...)
	}
	b = append(b, "\x1b[H\x1b[2J"...)
	for i, r := range rows {
		if i > 0 {
			// NOTE: no reset here: capture-pane -e writes each row's
			// attributes as changes from the row before.
			b = append(b, "\r\n"...)
		}
		b = append(b, r...)
	}
	b = append(b, "\x1b[0m"...)
	if c.upper != 0 || c.lower != c.rows-1 {
		if c.upper < c.lower && c.lower < c.rows {
			b = fmt.Appendf(b, "\x1b[%d;%dr", c.upper+1, c.lower+1)
		}
	}
	if !c.wrap {
		b = append(b, "\x1b[?7l"...)
	}
	if c.insert {
		b = append(b, "\x1b[4h"...)
	}
	if c.keypad {
		b = append(b, "\x1b="...)
	}
	if c.keypadCursor {
		b = append(b, "\x1b[?1h"...)
	}
	for _, m := range []struct {
		on   bool
		mode string
	}{{c.mouseStandard, "1000"}, {c.mouseButton, "1002"}, {c.mouseAny, "1003"}, {c.mouseUTF8, "1005"}, {c.mouseSGR, "1006"}} {
		if m.on {
			b = append(b, "\x1b[?"+m.mode+"h"...)
		}
	}
	y := c.y
	if c.origin {
		// CUP counts from the scroll region's top in origin mode.
		b = append(b, "\x1b[?6h"...)
		y -= c.upper
	}
	b = fmt.Appendf(b, "\x1b[%d;%dH", y+1, c.x+1)
	if !c.visible {
		b = append(b, "\x1b[?25l"...)
	}
	return b
}
