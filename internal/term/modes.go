package term

// Modes: set and reset (SM, RM, DECSET, DECRST) and reported (DECRQM).

import (
	"github.com/charmbracelet/x/ansi"
)

// setModes sets or resets each mode params names: ANSI modes (SM, RM) or
// DEC private ones (DECSET, DECRST).
func (e *emulator) setModes(params ansi.Params, set, isANSI bool) {
	for _, p := range params {
		n := p.Param(-1)
		if n == -1 {
			continue
		}
		if isANSI {
			if n == 20 {
				e.lnm = set
			}
			continue
		}
		e.setDECMode(n, set)
	}
}

// setDECMode sets or resets DEC private mode n.
func (e *emulator) setDECMode(n int, set bool) {
	switch n {
	case 6:
		e.origin = set
	case 7:
		e.autowrap = set
	case 25:
		e.scr.cur.hidden = !set
	case 69:
		e.lrmm = set
	case 1047:
		e.setAltScreen(set)
	case 1048:
		if set {
			e.scr.saved = e.scr.cur
		} else {
			e.scr.cur = e.scr.saved
			e.penOK = false
		}
	case 1049:
		if set {
			e.scr.saved = e.scr.cur
		}
		e.setAltScreen(set)
	case 2048:
		e.inBand = set
		if set {
			e.t.late = append(e.t.late, ansi.InBandResize(e.rows, e.cols, 0, 0)...)
		}
	}
}

// reportANSIMode answers DECRQM for an ANSI mode (CSI Ps $ p): none is
// recognised.
func (e *emulator) reportANSIMode(params ansi.Params) {
	if n, _, ok := params.Param(0, 0); ok {
		e.t.reply("\x1b[" + itoa(n) + ";0$y")
	}
}

// reportDECMode answers DECRQM for a DEC private mode (CSI ? Ps $ p).
func (e *emulator) reportDECMode(params ansi.Params) {
	if n, _, ok := params.Param(0, 0); ok {
		e.t.reply("\x1b[?" + itoa(n) + ";" + itoa(e.t.decModeSettingLocked(n)) + "$y")
	}
}
