package term

// The emulator: its state, its screens, and what changes them whole
// (the alternate screen, a full reset, a resize).

import (
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/ansi/parser"
)

// emulator is corral's terminal screen: an escape-sequence parser (the ansi
// package's) feeding a cell grid. It follows the reference emulator
// (charmbracelet/x/vt, kept as a test-only reference) operation for
// operation, quirks included, so screens and rules do not change; what
// differs is the representation: cells are packed runes with a style
// index, rows hold cells only up to the last one written, printable runs
// bypass the parser, full-width scrolls rotate row slices, history is a
// ring of text rows, and the alternate screen exists only while it is
// shown.
//
// Its hooks into Terminal (replies, events, the title) run under the
// Terminal's lock.
type emulator struct {
	t *Terminal
	// p is the parser, part of the emulator: its own object was one more
	// a pane keeps.
	p    ansi.Parser
	cols int
	rows int

	main screen
	alt  screen // lines nil until a program switches to it
	scr  *screen

	origin, autowrap, lnm, lrmm, inBand bool
	phantom                             bool

	charsets    [4]uint8 // 0 ASCII, 1 UK, 2 DEC special graphics
	gl, gr      int
	gsingle     int
	lastChar    rune
	tabs        []bool
	penIdx      uint16
	blankIdx    uint16
	penOK       bool
	blankOK     bool
	styleCache  *[32]styleSlot // nil while packed, until a pen is looked up
	styles      []style
	styleIdx    map[style]uint16
	links       []link
	linkIdx     map[link]uint16
	clusters    []string
	clusterIdx  map[string]int32
	pend        []byte // a grapheme cluster not yet written
	pendSimple  bool   // the last rune in pend is simple (see runeInfo)
	sb          scrollback
	scratch     []byte
	strLen      int // bytes of the string the parser is collecting
	testCsiHook func(final byte)
	// packed: the screens' cells are packed (see pack); every access to
	// cells unpacks them first (Terminal's methods do).
	packed bool
}

// dataSize bounds an OSC/DCS string the parser keeps: past it, the rest of
// the string is dropped. Status reports longer than MaxStatusSequence are
// discarded anyway, titles are cut at MaxTitle and notifications at
// MaxNotifyText. The parser's buffer grows to the longest string seen, not
// to dataSize at once: most panes only ever see short titles and reports.
const dataSize = 8 << 10

func newEmulator(t *Terminal, cols, rows, scrollback int) *emulator {
	e := &emulator{t: t, cols: cols, rows: rows}
	// Not ansi.NewParser: it makes a parameters array and a 64 KB data
	// buffer that the sizes below replace at once, garbage at each start.
	e.p.SetParamsSize(parser.MaxParamsSize)
	e.p.SetDataSize(-1) // grows as needed; write bounds it at dataSize
	e.p.SetHandler(ansi.Handler{
		Print:     e.printRune,
		Execute:   e.execute,
		HandleCsi: e.csi,
		HandleEsc: e.esc,
		HandleOsc: e.osc,
		HandleDcs: func(ansi.Cmd, ansi.Params, []byte) { e.flush() },
		HandleApc: func([]byte) { e.flush() },
		HandlePm:  func([]byte) { e.flush() },
		HandleSos: func([]byte) { e.flush() },
	})
	// The style cache and the tables' indexes are made on first use (a
	// pane that prints plain text never needs them: ~2 KB a pane).
	e.styles = []style{{}}
	e.links = []link{{}}
	e.main = e.newScreen()
	e.alt = screen{bottom: rows, right: cols}
	e.scr = &e.main
	e.autowrap = true
	e.gr = 1
	e.tabs = defaultTabs(cols)
	e.sb.max = scrollback
	return e
}

func (e *emulator) newScreen() screen {
	return screen{lines: newLines(e.rows), bottom: e.rows, right: e.cols, touched: make([]uint64, (e.rows+63)/64)}
}

func defaultTabs(cols int) []bool {
	tabs := make([]bool, cols)
	for x := 0; x < cols; x += 8 {
		tabs[x] = true
	}
	return tabs
}

func (e *emulator) setAltScreen(on bool) {
	if on == (e.scr == &e.alt) {
		return
	}
	if on {
		if e.alt.lines == nil {
			e.alt.lines = newLines(e.rows)
			e.alt.touched = make([]uint64, (e.rows+63)/64)
		}
		e.scr = &e.alt
		e.alt.cur = e.main.cur
		e.clear()
		e.goTo(0, 0)
	} else {
		// The alternate screen is cleared whenever it is entered, so its
		// cells are not kept while it is not shown.
		e.alt.lines, e.alt.touched = nil, nil
		e.alt.screenPack = nil
		e.scr = &e.main
	}
	e.penOK = false
	e.t.rowsValid = false
}

func (e *emulator) fullReset() {
	e.unpackRows()
	for _, s := range []*screen{&e.main, &e.alt} {
		for y, l := range s.lines {
			s.lines[y] = l[:0]
		}
		s.cur, s.saved = cursor{}, cursor{}
		s.top, s.bottom, s.left, s.right = 0, e.rows, 0, e.cols
	}
	e.tabs = defaultTabs(e.cols)
	e.origin, e.autowrap, e.lnm, e.lrmm, e.inBand = false, true, false, false, false
	e.setAltScreen(false)
	e.gl, e.gr, e.gsingle = 0, 1, 0
	e.charsets = [4]uint8{}
	e.phantom = false
	e.pend = e.pend[:0]
	e.lastChar = 0
	e.penOK = false
	e.t.rowsValid = false
}

// resize changes the size without reflow, as the reference does: columns
// are cut or added on the right, rows at the bottom.
func (e *emulator) resize(cols, rows int) {
	s := e.scr
	x, y := s.cur.x, s.cur.y
	if e.phantom && x < cols-1 {
		e.phantom = false
		x++
	}
	y = min(max(y, 0), rows-1)
	x = min(max(x, 0), cols-1)
	for _, sc := range []*screen{&e.main, &e.alt} {
		if sc.lines != nil {
			sc.lines = resizeLines(sc.lines, cols, rows)
			sc.touched = make([]uint64, (rows+63)/64)
			sc.screenPack = nil // every row unpacked (Resize)
		}
		sc.top, sc.bottom, sc.left, sc.right = 0, rows, 0, cols
		if sc != s {
			// NOTE: the reference leaves the other screen's cursor where it
			// was, possibly off the new screen; it is kept on it here.
			sc.cur.x, sc.cur.y = min(sc.cur.x, cols-1), min(sc.cur.y, rows-1)
		}
	}
	e.cols, e.rows = cols, rows
	e.tabs = defaultTabs(cols)
	e.goTo(x, y)
	if e.inBand {
		e.t.late = append(e.t.late, ansi.InBandResize(rows, cols, 0, 0)...)
	}
}

// resizeLines keeps the rows that still fit, cut to cols columns. A row
// with room for more than cols cells moves to a smaller array: no row
// holds more than the screen is wide.
func resizeLines(lines [][]cell, cols, rows int) [][]cell {
	fresh := newLines(rows)
	for y := 0; y < rows && y < len(lines); y++ {
		l := lines[y]
		l = trimRow(l[:min(len(l), cols)])
		if cap(l) > cols {
			if len(l) == 0 {
				l = nil
			} else {
				l = append(make([]cell, 0, rowCap(len(l), cols)), l...)
			}
		}
		fresh[y] = l
	}
	return fresh
}
