package term

import "github.com/charmbracelet/x/ansi"

// Count parameters are clamped before the emulator sees them. The emulator
// loops once per count: "CSI 999999999 X" (erase characters) took seconds,
// and "CSI 999999999 b" (repeat the last character) never finished — ten
// bytes from a pane would stall its reader. Counts beyond the screen change
// nothing visible, so they are cut to what the screen can show.
func (t *Terminal) installLimits() {
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
