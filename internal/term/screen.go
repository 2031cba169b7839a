package term

import (
	"slices"
	"unicode/utf8"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/ansi/parser"
)

// cell is one column of a row: 8 bytes. r is the character, or
// clusterBase+i for a grapheme cluster kept in the cluster table; a zero
// cell (r 0, w 0) is the continuation of a wide character. st indexes the
// style table.
type cell struct {
	r  rune
	st uint16
	w  uint8
}

const clusterBase = 0x110000

// emptyCell is a blank: a space, one column wide, in the default style.
var emptyCell = cell{r: ' ', w: 1}

// cursor is what DECSC saves: position, pen and visibility.
type cursor struct {
	x, y   int
	pen    style
	hidden bool
}

// screen is one page of cells (the main or the alternate screen) with its
// cursor, scroll region and touched-row marks.
//
// Rows are sparse, as tmux keeps its lines: a row holds its cells from
// column 0 up to the last one written (at most the screen's width), and the
// columns past its length read as emptyCell. A row never written, or erased
// to blanks, holds none. Erasing to the end of a row shortens it and keeps
// its capacity, so a row redrawn in place (a spinner) or reused by a scroll
// does not allocate again.
type screen struct {
	lines      [][]cell
	cur, saved cursor
	// The scroll region: rows [top, bottom), columns [left, right).
	top, bottom, left, right int
	touched                  []uint64
}

func (s *screen) touch(y int) { s.touched[y>>6] |= 1 << (y & 63) }

func (s *screen) touchRange(y0, y1 int) {
	for y0 < y1 {
		w := y0 >> 6
		end := min(y1, (w+1)<<6)
		n := end - y0
		mask := ^uint64(0)
		if n < 64 {
			mask = (1<<n - 1) << (y0 & 63)
		}
		s.touched[w] |= mask
		y0 = end
	}
}

// newLines returns rows blank rows: none holds a cell yet.
func newLines(rows int) [][]cell { return make([][]cell, rows) }

// rowGrain is the step, in cells, in which a row's capacity grows.
const rowGrain = 16

// rowCap is the capacity given to a row that must hold n cells: n rounded
// up to rowGrain, or the whole width once that is more than half of it.
func rowCap(n, cols int) int {
	c := (n + rowGrain - 1) &^ (rowGrain - 1)
	if c > cols/2 {
		c = cols
	}
	return max(c, n)
}

// growRow returns row l lengthened to n cells (n at most cols), the new
// cells blank. When l has no room, it moves to an array with room for
// max(n, want) cells (see rowCap), never more than cols.
func growRow(l []cell, n, want, cols int) []cell {
	if n <= len(l) {
		return l
	}
	return lengthen(l, n, want, cols)
}

// lengthen is growRow's slow path, kept out of line so growRow inlines.
//
//go:noinline
func lengthen(l []cell, n, want, cols int) []cell {
	old := len(l)
	if n > cap(l) {
		nl := make([]cell, n, rowCap(min(max(n, want), cols), cols))
		copy(nl, l)
		l = nl
	} else {
		l = l[:n]
	}
	for i := old; i < n; i++ {
		l[i] = emptyCell
	}
	return l
}

// trimRow drops the blank cells at the end of row l; its capacity stays.
func trimRow(l []cell) []cell {
	n := len(l)
	for n > 0 && l[n-1] == emptyCell {
		n--
	}
	return l[:n]
}

// cellAt reads column x of row l, past its end a blank.
func cellAt(l []cell, x int) cell {
	if x < len(l) {
		return l[x]
	}
	return emptyCell
}

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
	t    *Terminal
	p    *ansi.Parser
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
	styleCache  [32]styleSlot
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
}

// dataSize bounds an OSC/DCS string the parser keeps: past it, the rest of
// the string is dropped. Status reports longer than MaxStatusSequence are
// discarded anyway, titles are cut at MaxTitle and notifications at
// MaxNotifyText. The parser's buffer grows to the longest string seen, not
// to dataSize at once: most panes only ever see short titles and reports.
const dataSize = 8 << 10

func newEmulator(t *Terminal, cols, rows, scrollback int) *emulator {
	e := &emulator{t: t, cols: cols, rows: rows}
	e.p = ansi.NewParser()
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
	e.styles = []style{{}}
	e.styleIdx = map[style]uint16{{}: 0}
	e.links = []link{{}}
	e.linkIdx = map[link]uint16{{}: 0}
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

// write feeds bytes (valid UTF-8, see sanitizeLocked). Printable runs and
// plain controls in the ground state skip the parser's per-byte walk.
func (e *emulator) write(p []byte) {
	for i := 0; i < len(p); {
		b := p[i]
		if e.p.State() == parser.GroundState {
			switch {
			case b >= 0x20 && b < 0x7f:
				j := i + 1
				for j < len(p) && p[j] >= 0x20 && p[j] < 0x7f {
					j++
				}
				e.printASCII(p[i:j])
				i = j
				continue
			case b >= 0xc2 && b < 0xf5:
				r, size := utf8.DecodeRune(p[i:])
				if size > 1 {
					e.printRune(r)
					i += size
					continue
				}
			case b == 0x1b:
				if n := e.fastCSI(p[i:]); n > 0 {
					i += n
					continue
				}
			case b < 0x20:
				e.execute(b)
				i++
				continue
			}
		}
		e.advance(b)
		i++
	}
	e.flush()
}

// advance feeds one byte to the parser, keeping its string data within
// dataSize: a byte the parser would add to a string already that long is
// dropped, as a parser with a fixed buffer drops it.
func (e *emulator) advance(b byte) {
	prev := e.p.State()
	if e.strLen >= dataSize && isStringState(prev) {
		if _, act := parser.Table.Transition(prev, b); act == parser.PutAction {
			return
		}
	}
	act := e.p.Advance(b)
	switch {
	case act == parser.StartAction || !isStringState(e.p.State()):
		e.strLen = 0
	case act == parser.PutAction:
		e.strLen++
	}
}

func isStringState(s parser.State) bool {
	switch s {
	case parser.OscStringState, parser.DcsStringState, parser.SosStringState, parser.PmStringState, parser.ApcStringState:
		return true
	}
	return false
}

// fastCSI parses and dispatches a CSI sequence that lies whole in p (which
// starts with ESC), the way the ansi parser would, and returns its length;
// 0 leaves it to the parser (split sequences, controls or ignored bytes
// inside, too many parameters).
func (e *emulator) fastCSI(p []byte) int {
	if len(p) < 3 || p[1] != '[' {
		return 0
	}
	var params [16]ansi.Param
	n := 0
	params[0] = parser.MissingParam
	i := 2
	prefix := 0
	if c := p[i]; c >= '<' && c <= '?' {
		prefix = int(c)
		i++
	}
	for ; i < len(p); i++ {
		c := p[i]
		switch {
		case c >= '0' && c <= '9':
			if params[n] == parser.MissingParam {
				params[n] = 0
			}
			params[n] = params[n]*10 + ansi.Param(c-'0')
			continue
		case c == ';' || c == ':':
			if c == ':' {
				params[n] |= parser.HasMoreFlag
			}
			n++
			if n >= len(params) {
				return 0
			}
			params[n] = parser.MissingParam
			continue
		}
		break
	}
	inter := 0
	if i < len(p) && p[i] >= 0x20 && p[i] <= 0x2f {
		inter = int(p[i])
		i++
	}
	if i >= len(p) || p[i] < 0x40 || p[i] > 0x7e {
		return 0
	}
	if n > 0 || params[0] != parser.MissingParam {
		n++
	}
	cmd := ansi.Cmd(prefix<<parser.PrefixShift | inter<<parser.IntermedShift | int(p[i]))
	e.csi(cmd, params[:n])
	return i + 1
}

// --- printing ---

// printASCII prints a run of printable ASCII. The reference holds each
// character back until the next one arrives (a combining mark may follow);
// so does this, but only the last of the run.
func (e *emulator) printASCII(run []byte) {
	if len(e.pend) > 0 {
		e.flush()
	}
	body := run[:len(run)-1]
	if len(body) > 0 {
		if e.charsets[e.gl] == 0 && e.gsingle == 0 {
			e.fastASCII(body)
		} else {
			for _, c := range body {
				e.put(rune(c), 1, true)
			}
		}
	}
	e.pend = append(e.pend[:0], run[len(run)-1])
	e.pendSimple = true
}

// fastASCII writes ASCII characters straight into the row: no charset, no
// cluster, one style lookup for the run.
func (e *emulator) fastASCII(run []byte) {
	s := e.scr
	st := e.pen()
	cols := e.cols
	x, y := s.cur.x, s.cur.y
	if y < 0 || y >= e.rows {
		for _, c := range run {
			e.put(rune(c), 1, true)
		}
		return
	}
	line := s.lines[y]
	// A row is marked touched only if a cell changes: programs redraw
	// whole rows with mostly the same text, and the snapshot cache then
	// rebuilds only the rows that differ.
	changed := false
	for i, c := range run {
		if e.phantom && e.autowrap {
			if len(line) != len(s.lines[y]) {
				s.lines[y] = line
			}
			if changed {
				s.touch(y)
			}
			e.index()
			y = s.cur.y
			x = 0
			line = s.lines[y]
			changed = false
			st = e.pen() // a scroll may have rebuilt the style table
		}
		if x >= 0 && x < cols {
			nc := cell{r: rune(c), st: st, w: 1}
			switch {
			case x >= len(line):
				// Past the row's end every column is blank. The row is
				// lengthened once for the rest of the run.
				if nc != emptyCell {
					line = growRow(line, min(x+len(run)-i, cols), 0, cols)
					line[x] = nc
					changed = true
				}
			case line[x].w == 1:
				if line[x] != nc {
					line[x] = nc
					changed = true
				}
			default:
				if len(line) != len(s.lines[y]) {
					s.lines[y] = line
				}
				e.set(x, y, nc)
				line = s.lines[y]
			}
		}
		e.phantom = e.autowrap && x >= cols-1
		if !e.phantom {
			x++
		}
		x = min(max(x, 0), cols-1)
		s.cur.x = x
	}
	if len(line) != len(s.lines[y]) {
		s.lines[y] = line
	}
	if changed {
		s.touch(y)
	}
	e.lastChar = rune(run[len(run)-1])
}

const maxPending = 256

// printRune takes a non-ASCII character (or, from the parser, any).
func (e *emulator) printRune(r rune) {
	if r >= 0x20 && r < 0x7f {
		if len(e.pend) > 0 {
			e.flush()
		}
		e.pend = append(e.pend[:0], byte(r))
		e.pendSimple = true
		return
	}
	info := runeInfo(r)
	simple := info&infoSimple != 0
	// A cluster is cut at maxPending bytes: a flood of combining marks
	// must not grow one cell without bound.
	if len(e.pend) > 0 && (e.pendSimple && simple || len(e.pend) >= maxPending) {
		e.flush()
	}
	e.pend = utf8.AppendRune(e.pend, r)
	e.pendSimple = simple
}

// flush writes the pending cluster(s), as the reference does before any
// control or sequence and at the end of each write.
func (e *emulator) flush() {
	p := e.pend
	if len(p) == 0 {
		return
	}
	e.pend = p[:0]
	if len(p) == 1 && p[0] < utf8.RuneSelf {
		e.put(rune(p[0]), 1, true)
		return
	}
	if r, size := utf8.DecodeRune(p); size == len(p) {
		e.put(r, int(runeInfo(r)&infoWidthMask), false)
		return
	}
	for len(p) > 0 {
		cluster, width := ansi.FirstGraphemeCluster(p, ansi.GraphemeWidth)
		if len(cluster) == 0 {
			break
		}
		if r, size := utf8.DecodeRune(cluster); size == len(cluster) {
			e.put(r, width, len(cluster) == 1)
		} else {
			e.put(e.cluster(cluster), width, false)
		}
		p = p[len(cluster):]
	}
}

func (e *emulator) cluster(b []byte) rune {
	if i, ok := e.clusterIdx[string(b)]; ok {
		return clusterBase + i
	}
	if len(e.clusters) >= e.tableLimit() {
		e.compactClusters()
		if len(e.clusters) >= e.tableLimit() {
			return utf8.RuneError
		}
	}
	if e.clusterIdx == nil {
		e.clusterIdx = map[string]int32{}
	}
	s := string(b)
	i := int32(len(e.clusters))
	e.clusters = append(e.clusters, s)
	e.clusterIdx[s] = i
	return clusterBase + i
}

// put writes one cluster at the cursor (the reference's handleGrapheme).
func (e *emulator) put(r rune, width int, ascii bool) {
	s := e.scr
	x, y := s.cur.x, s.cur.y
	if e.phantom && e.autowrap {
		e.index()
		y = s.cur.y
		x = 0
	}
	single := e.gsingle
	e.gsingle = 0
	if ascii {
		orig := r
		cs := e.charsets[e.gl]
		if single > 1 && single < 4 {
			cs = e.charsets[single]
		}
		if cs != 0 {
			if m, ok := mapCharset(cs, byte(r)); ok {
				r, width = m, 1
			}
		}
		if width == 1 {
			e.lastChar = orig
		}
	}
	e.set(x, y, cell{r: r, st: e.pen(), w: uint8(width)})
	e.phantom = e.autowrap && x >= e.cols-1
	if !e.phantom {
		x += width
	}
	e.setCursor(x, y, false)
}

func mapCharset(cs uint8, c byte) (rune, bool) {
	switch cs {
	case 1:
		if c == '$' {
			return '£', true
		}
	case 2:
		if c >= '`' && c <= '~' {
			return specialGraphics[c-'`'], true
		}
	}
	return 0, false
}

var specialGraphics = [...]rune{'◆', '▒', '␉', '␌', '␍', '␊', '°', '±', '␤', '␋', '┘', '┐', '┌', '└', '┼', '⎺', '⎻', '─', '⎼', '⎽', '├', '┤', '┴', '┬', '│', '⩽', '⩾', 'π', '≠', '£', '·'}

// set writes a cell the way ultraviolet's Line.Set does: overwriting
// either half of a wide character blanks all of it, and a wide character
// that does not fit becomes blanks.
func (e *emulator) set(x, y int, c cell) {
	s := e.scr
	cols := e.cols
	if y < 0 || y >= len(s.lines) || x < 0 || x >= cols {
		return
	}
	s.touch(y)
	l := s.lines[y]
	was := len(l)
	if x >= was && c == emptyCell {
		return // a blank past the row's end is there already
	}
	if x < was && l[x].w != 1 {
		l = e.unwide(l, x)
	}
	cw := int(c.w)
	if n := min(x+max(cw, 1), cols); n > len(l) {
		if n <= cap(l) {
			// The common case, a row written past its end one character
			// at a time: inline.
			old := len(l)
			l = l[:n]
			for i := old; i < n; i++ {
				l[i] = emptyCell
			}
		} else {
			l = lengthen(l, n, 0, cols)
		}
	}
	if len(l) != was {
		// Rows only lengthen here; an unchanged row is not stored again
		// (a pointer store costs a write barrier while the GC runs).
		s.lines[y] = l
	}
	l[x] = c
	if x+cw > cols {
		for i := 0; i < cw && x+i < cols; i++ {
			l[x+i] = cell{r: ' ', st: c.st, w: 1}
		}
		return
	}
	for j := 1; j < cw && x+j < cols; j++ {
		l[x+j] = cell{}
	}
}

// unwide blanks the wide character that covers column x of row l, if any,
// and returns the row (longer if the blanks reach past its end).
func (e *emulator) unwide(l []cell, x int) []cell {
	if x >= len(l) {
		return l
	}
	cols := e.cols
	prev := l[x]
	if pw := int(prev.w); pw > 1 {
		l = growRow(l, min(x+pw, cols), 0, cols)
		for j := 0; j < pw && x+j < cols; j++ {
			l[x+j] = cell{r: ' ', st: prev.st, w: 1}
		}
	} else if pw == 0 {
		for j := 1; x-j >= 0; j++ {
			wide := l[x-j]
			if ww := int(wide.w); ww > 1 && j < ww {
				l = growRow(l, min(x-j+ww, cols), 0, cols)
				for k := 0; k < ww && x-j+k < cols; k++ {
					l[x-j+k] = cell{r: ' ', st: wide.st, w: 1}
				}
				break
			}
		}
	}
	return l
}

// fill sets columns [x0, x1) of row y to c (FillArea of one row). Blanks
// reaching the row's end shorten it.
func (e *emulator) fill(y, x0, x1 int, c cell) {
	s := e.scr
	if y < 0 || y >= len(s.lines) {
		return
	}
	cols := e.cols
	x0, x1 = max(x0, 0), min(x1, cols)
	if x0 >= x1 {
		return
	}
	s.touch(y)
	l := s.lines[y]
	if c != emptyCell {
		l = growRow(l, x1, x1, cols)
	}
	// Blanks past the row's end are there already (the end may move while
	// a wide character is blanked).
	for x := x0; x < x1 && x < len(l); x++ {
		if l[x].w == 1 {
			l[x] = c
		} else {
			if len(l) != len(s.lines[y]) {
				s.lines[y] = l
			}
			e.set(x, y, c)
			l = s.lines[y]
		}
	}
	if c == emptyCell && x1 >= len(l) {
		l = trimRow(l[:min(x0, len(l))])
	}
	if len(l) != len(s.lines[y]) {
		s.lines[y] = l
	}
}

// --- styles ---

// pen returns the style index of the cursor's pen.
func (e *emulator) pen() uint16 {
	if !e.penOK {
		e.penIdx = e.lookup(e.scr.cur.pen)
		e.penOK = true
		e.blankOK = false
	}
	return e.penIdx
}

// blank is the cell erases leave: empty, with the pen's background.
func (e *emulator) blank() cell {
	if !e.penOK || !e.blankOK {
		e.pen()
		e.blankIdx = e.lookup(style{bg: e.scr.cur.pen.bg})
		e.blankOK = true
	}
	return cell{r: ' ', st: e.blankIdx, w: 1}
}

type styleSlot struct {
	st  style
	idx uint16
	ok  bool
}

// lookup interns a style through a small direct-mapped cache: programs
// switch among a handful of colours, and the map costs a hash of the
// whole style.
func (e *emulator) lookup(st style) uint16 {
	h := ((uint64(st.fg) ^ uint64(st.bg)*0xc2b2ae3d27d4eb4f ^ uint64(st.ul)*0x165667b19e3779f9 ^
		uint64(st.attrs)<<40 ^ uint64(st.under)<<48 ^ uint64(st.link)<<52) * 0x9e3779b97f4a7c15) >> 59
	sl := &e.styleCache[h]
	if sl.ok && sl.st == st {
		return sl.idx
	}
	i := e.intern(st)
	e.styleCache[h] = styleSlot{st: st, idx: i, ok: true}
	return i
}

func (e *emulator) intern(st style) uint16 {
	if i, ok := e.styleIdx[st]; ok {
		return i
	}
	if len(e.styles) >= e.tableLimit() {
		e.compactStyles()
		if len(e.styles) >= e.tableLimit() {
			return 0
		}
	}
	i := uint16(len(e.styles))
	e.styles = append(e.styles, st)
	e.styleIdx[st] = i
	return i
}

// compactStyles rebuilds the style table from what the cells use; a
// program printing a new colour per cell cannot grow it past the screen.
// Pens hold styles, not indices, so only cells are rewritten.
func (e *emulator) compactStyles() {
	styles := []style{{}}
	idx := map[style]uint16{{}: 0}
	for _, s := range []*screen{&e.main, &e.alt} {
		for _, l := range s.lines {
			for x := range l {
				c := &l[x]
				if c.st == 0 {
					continue
				}
				st := e.styles[c.st]
				i, ok := idx[st]
				if !ok {
					i = uint16(len(styles))
					styles = append(styles, st)
					idx[st] = i
				}
				c.st = i
			}
		}
	}
	e.styles, e.styleIdx = styles, idx
	e.styleCache = [32]styleSlot{}
	e.penOK = false
}

// compactLinks rebuilds the link table from the links that styles used by
// cells, and the pens, still refer to. Style entries are rewritten in
// place, so cells keep their style indices.
func (e *emulator) compactLinks() {
	used := make([]bool, len(e.links))
	for _, s := range []*screen{&e.main, &e.alt} {
		used[s.cur.pen.link] = true
		used[s.saved.pen.link] = true
		for _, l := range s.lines {
			for _, c := range l {
				if int(c.st) < len(e.styles) {
					used[e.styles[c.st].link] = true
				}
			}
		}
	}
	remap := make([]uint16, len(e.links))
	links := []link{{}}
	idx := map[link]uint16{{}: 0}
	for i, l := range e.links {
		if i == 0 || !used[i] {
			continue
		}
		remap[i] = uint16(len(links))
		idx[l] = remap[i]
		links = append(links, l)
	}
	for i := range e.styles {
		e.styles[i].link = remap[e.styles[i].link]
	}
	e.styleIdx = make(map[style]uint16, len(e.styles))
	for i := len(e.styles) - 1; i >= 0; i-- {
		e.styleIdx[e.styles[i]] = uint16(i)
	}
	for _, s := range []*screen{&e.main, &e.alt} {
		s.cur.pen.link = remap[s.cur.pen.link]
		s.saved.pen.link = remap[s.saved.pen.link]
	}
	e.links, e.linkIdx = links, idx
	e.styleCache = [32]styleSlot{}
	e.penOK = false
}

// compactClusters does the same for the grapheme cluster table.
func (e *emulator) compactClusters() {
	var clusters []string
	idx := map[string]int32{}
	for _, s := range []*screen{&e.main, &e.alt} {
		for _, l := range s.lines {
			for x := range l {
				c := &l[x]
				if c.r < clusterBase {
					continue
				}
				str := e.clusters[c.r-clusterBase]
				i, ok := idx[str]
				if !ok {
					i = int32(len(clusters))
					clusters = append(clusters, str)
					idx[str] = i
				}
				c.r = clusterBase + i
			}
		}
	}
	e.clusters, e.clusterIdx = clusters, idx
}

// --- cursor ---

// setCursor moves the cursor; with margins, relative to the scroll region
// and confined to it (the reference's Screen.setCursor).
func (e *emulator) setCursor(x, y int, margins bool) {
	s := e.scr
	if !margins {
		y = min(max(y, 0), e.rows-1)
		x = min(max(x, 0), e.cols-1)
	} else {
		y = min(max(s.top+y, s.top), s.bottom-1)
		x = min(max(s.left+x, s.left), s.right-1)
	}
	s.cur.x, s.cur.y = x, y
}

func (s *screen) inRegion(x, y int) bool {
	return x >= s.left && x < s.right && y >= s.top && y < s.bottom
}

// moveCursor moves by a delta, within the scroll region when the cursor is
// inside it.
func (e *emulator) moveCursorRaw(dx, dy int) {
	s := e.scr
	left, right, top, bottom := s.left, s.right, s.top, s.bottom
	ox, oy := s.cur.x, s.cur.y
	if ox < left {
		left = 0
	}
	if ox >= right {
		right = e.cols
	}
	x, y := ox+dx, oy+dy
	if ox >= left && ox < right && oy >= top && oy < bottom {
		y = min(max(y, top), bottom-1)
		x = min(max(x, left), right-1)
	} else {
		y = min(max(y, 0), e.rows-1)
		x = min(max(x, 0), e.cols-1)
	}
	s.cur.x, s.cur.y = x, y
}

func (e *emulator) moveCursor(dx, dy int) {
	e.moveCursorRaw(dx, dy)
	e.phantom = false
}

func (e *emulator) goTo(x, y int) {
	e.setCursor(x, y, false)
	e.phantom = false
}

func (e *emulator) goToOrigin(x, y int) {
	e.setCursor(x, y, e.origin)
	e.phantom = false
}

func (e *emulator) carriageReturn() {
	s := e.scr
	x, y := s.cur.x, s.cur.y
	switch {
	case e.origin:
		e.setCursor(0, y, true)
	case s.inRegion(x, y):
		e.setCursor(s.left, y, false)
	default:
		e.setCursor(0, y, false)
	}
	e.phantom = false
}

func (e *emulator) index() {
	s := e.scr
	x, y := s.cur.x, s.cur.y
	if y == s.bottom-1 && x >= s.left && x < s.right {
		e.scrollUp(1)
	} else if y < s.bottom-1 || !s.inRegion(x, y) {
		e.moveCursorRaw(0, 1)
	}
	e.phantom = false
}

func (e *emulator) reverseIndex() {
	s := e.scr
	x, y := s.cur.x, s.cur.y
	if y == s.top && x >= s.left && x < s.right {
		e.scrollDown(1)
	} else {
		e.moveCursorRaw(0, -1)
	}
}

func (e *emulator) linefeed() {
	e.index()
	if e.lnm {
		e.carriageReturn()
	}
}

func (e *emulator) nextTab(n int) {
	s := e.scr
	x, y := s.cur.x, s.cur.y
	for range n {
		ts := e.tabFind(x, 1)
		if ts <= x {
			break
		}
		x = ts
	}
	if x >= s.right {
		x = min(s.right-1, e.cols-1)
	}
	e.setCursor(x, y, false)
}

func (e *emulator) prevTab(n int) {
	s := e.scr
	x := s.cur.x
	leftmargin := 0
	if e.origin {
		leftmargin = s.left
	}
	for range n {
		ts := e.tabFind(x, -1)
		if ts >= x {
			break
		}
		x = ts
	}
	x = max(x, leftmargin)
	e.setCursor(x, s.cur.y, false)
}

// tabFind is ultraviolet's TabStops.Find for one stop.
func (e *emulator) tabFind(col, delta int) int {
	width := len(e.tabs)
	for {
		if delta > 0 {
			if col >= width-1 {
				return col
			}
			col++
		} else {
			if col < 1 {
				return col
			}
			col--
		}
		if col >= 0 && col < width && e.tabs[col] {
			return col
		}
	}
}

// --- lines ---

// scrollUp is SU: delete n lines at the top of the region.
func (e *emulator) scrollUp(n int) {
	s := e.scr
	x, y := s.cur.x, s.cur.y
	e.setCursor(s.cur.x, 0, true)
	e.deleteLine(n)
	e.setCursor(x, y, false)
}

func (e *emulator) scrollDown(n int) {
	s := e.scr
	x, y := s.cur.x, s.cur.y
	e.setCursor(s.cur.x, 0, true)
	e.insertLine(n)
	e.setCursor(x, y, false)
}

func (e *emulator) insertLine(n int) bool {
	s := e.scr
	x, y := s.cur.x, s.cur.y
	if n <= 0 || !s.inRegion(x, y) {
		return false
	}
	n = min(n, s.bottom-y)
	c := e.blank()
	if s.left == 0 && s.right == e.cols {
		// Rotate: the bottom n rows of the region become the new rows.
		var stack [8][]cell
		moved := append(stack[:0], s.lines[s.bottom-n:s.bottom]...)
		copy(s.lines[y+n:s.bottom], s.lines[y:s.bottom-n])
		copy(s.lines[y:y+n], moved)
		for i := y; i < y+n; i++ {
			s.lines[i] = e.blankRow(s.lines[i], c)
		}
		s.touchRange(s.top, s.bottom)
		return true
	}
	for i := s.bottom - 1; i >= y+n; i-- {
		e.copyCells(i, i-n, s.left, s.right)
	}
	for i := y; i < y+n; i++ {
		for x := s.left; x < s.right; x++ {
			e.set(x, i, c)
		}
	}
	s.touchRange(s.top, s.bottom)
	return true
}

func (e *emulator) deleteLine(n int) bool {
	s := e.scr
	x, y := s.cur.x, s.cur.y
	if n <= 0 || !s.inRegion(x, y) {
		return false
	}
	n = min(n, s.bottom-y)
	full := s.left == 0 && s.right == e.cols
	if s == &e.main && y == s.top && full {
		for i := y; i < y+n; i++ {
			e.sb.push(e, s.lines[i])
		}
	}
	c := e.blank()
	if full {
		var stack [8][]cell
		moved := append(stack[:0], s.lines[y:y+n]...)
		copy(s.lines[y:s.bottom-n], s.lines[y+n:s.bottom])
		copy(s.lines[s.bottom-n:s.bottom], moved)
		for i := s.bottom - n; i < s.bottom; i++ {
			s.lines[i] = e.blankRow(s.lines[i], c)
		}
		s.touchRange(s.top, s.bottom)
		return true
	}
	for dst := y; dst < s.bottom-n; dst++ {
		e.copyCells(dst, dst+n, s.left, s.right)
	}
	for i := s.bottom - n; i < s.bottom; i++ {
		for x := s.left; x < s.right; x++ {
			e.set(x, i, c)
		}
	}
	s.touchRange(s.top, s.bottom)
	return true
}

// blankRow returns row l filled with c across the screen: emptied, its
// capacity kept, when c is a blank.
func (e *emulator) blankRow(l []cell, c cell) []cell {
	if c == emptyCell {
		return l[:0]
	}
	l = growRow(l[:0], e.cols, e.cols, e.cols)
	for x := range l {
		l[x] = c
	}
	return l
}

// copyCells copies columns [x0, x1) of row src onto row dst (a plain copy:
// a wide character may be cut at either edge, as in the reference).
func (e *emulator) copyCells(dst, src, x0, x1 int) {
	s := e.scr
	from, to := s.lines[src], s.lines[dst]
	hi := max(min(x1, len(from)), x0)
	if hi > x0 {
		to = growRow(to, hi, hi, e.cols)
		copy(to[x0:hi], from[x0:hi])
	}
	// Past the source row's end its columns are blank.
	for x := hi; x < x1 && x < len(to); x++ {
		to[x] = emptyCell
	}
	if x1 >= len(to) {
		to = trimRow(to)
	}
	s.lines[dst] = to
}

func (e *emulator) insertCell(n int) {
	s := e.scr
	x, y := s.cur.x, s.cur.y
	if n <= 0 || !s.inRegion(x, y) {
		return
	}
	n = min(n, s.right-x)
	// Cells shift right within the region; the shift reaches past the
	// row's end by at most n, and only blanks move beyond that.
	if l := s.lines[y]; len(l) > x {
		hi := min(s.right, len(l)+n)
		l = growRow(l, hi, hi, e.cols)
		for i := hi - 1; i >= x+n && i-n >= s.left; i-- {
			l[i] = l[i-n]
		}
		s.lines[y] = l
	}
	c := e.blank()
	for i := x; i < x+n && i < s.right; i++ {
		e.set(i, y, c)
	}
	s.lines[y] = trimRow(s.lines[y])
	s.touch(y)
}

func (e *emulator) deleteCell(n int) {
	s := e.scr
	x, y := s.cur.x, s.cur.y
	if n <= 0 || !s.inRegion(x, y) {
		return
	}
	n = min(n, s.right-x)
	cols := e.cols
	l := s.lines[y]
	// Past the row's end every cell and its source are blank: nothing
	// moves there (the end may move while a wide character is blanked).
	for i := x; i < s.right-n && i < len(l); i++ {
		// Set's wide-character cleanup runs before the source is read,
		// as in the reference (the source cell may be blanked by it).
		l = e.unwide(l, i)
		src := cellAt(l, i+n)
		l[i] = src
		if cw := int(src.w); cw > 1 {
			if i+cw > cols {
				l = growRow(l, cols, cols, cols)
				for k := 0; k < cw && i+k < cols; k++ {
					l[i+k] = cell{r: ' ', st: src.st, w: 1}
				}
			} else {
				l = growRow(l, i+cw, i+cw, cols)
				for j := 1; j < cw; j++ {
					l[i+j] = cell{}
				}
			}
		}
	}
	s.lines[y] = l
	c := e.blank()
	for i := s.right - n; i < s.right; i++ {
		e.set(i, y, c)
	}
	s.lines[y] = trimRow(s.lines[y])
	s.touch(y)
}

// eraseDisplay is ED.
func (e *emulator) eraseDisplay(n int) bool {
	s := e.scr
	x, y := s.cur.x, s.cur.y
	switch n {
	case 0:
		c := e.blank()
		e.fill(y, x, x+e.cols, c)
		for i := y + 1; i < e.rows; i++ {
			e.fill(i, 0, e.cols, c)
		}
	case 1:
		c := e.blank()
		for i := 0; i <= y && i < e.rows; i++ {
			e.fill(i, 0, e.cols, c)
		}
	case 2:
		if s == &e.main {
			for _, l := range s.lines {
				if !lineEmpty(l) {
					e.sb.push(e, l)
				}
			}
		}
		e.clear()
	case 3:
		e.clear()
		if s == &e.main {
			e.sb.clear()
		}
	default:
		return false
	}
	return true
}

func lineEmpty(l []cell) bool {
	for _, c := range l {
		if c.r != ' ' && !(c.r == 0 && c.w == 0) {
			return false
		}
	}
	return true
}

func (e *emulator) clear() {
	s := e.scr
	for y, l := range s.lines {
		s.lines[y] = l[:0]
	}
	s.touchRange(0, len(s.lines))
}

// --- alternate screen, reset, resize ---

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
		e.scr = &e.main
	}
	e.penOK = false
	e.t.rowsValid = false
}

func (e *emulator) fullReset() {
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

// --- controls and sequences ---

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

func (e *emulator) tabSet() {
	if x := e.scr.cur.x; x >= 0 && x < len(e.tabs) {
		e.tabs[x] = true
	}
}

func (e *emulator) esc(cmd ansi.Cmd) {
	e.flush()
	t := e.t
	if inter := cmd.Intermediate(); inter != 0 {
		set := int(inter) - '('
		if set < 0 || set > 3 {
			return
		}
		switch cmd.Final() {
		case 'A':
			e.charsets[set] = 1
		case 'B':
			e.charsets[set] = 0
		case '0':
			e.charsets[set] = 2
		}
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
				if n, _, ok := params.Param(0, 0); ok {
					e.t.reply("\x1b[" + itoa(n) + ";0$y")
				}
			}
		}
	case '?':
		if cmd.Intermediate() == '$' {
			if final == 'p' {
				if n, _, ok := params.Param(0, 0); ok {
					e.t.reply("\x1b[?" + itoa(n) + ";" + itoa(e.t.decModeSettingLocked(n)) + "$y")
				}
			}
			return
		}
		if cmd.Intermediate() != 0 {
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
	case '>':
		if cmd.Intermediate() != 0 {
			return
		}
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
}

// perLine bounds counts whose effect cannot exceed a line or a column.
func (e *emulator) perLine() int { return max(e.cols, e.rows) }

func (e *emulator) csiPlain(final byte, params ansi.Params) {
	s := e.scr
	n1 := func() int {
		n, _, _ := params.Param(0, 1)
		return min(n, e.perLine())
	}
	switch final {
	case '@':
		e.insertCell(n1())
	case 'A':
		e.moveCursor(0, -n1())
	case 'B':
		e.moveCursor(0, n1())
	case 'C':
		e.moveCursor(n1(), 0)
	case 'D':
		e.moveCursor(-n1(), 0)
	case 'E':
		e.moveCursor(0, n1())
		e.carriageReturn()
	case 'F':
		e.moveCursor(0, -n1())
		e.carriageReturn()
	case 'G':
		e.goTo(n1()-1, s.cur.y)
	case 'H', 'f':
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
	case 'I':
		e.nextTab(n1())
	case 'J':
		n, _, _ := params.Param(0, 0)
		e.eraseDisplay(n)
	case 'K':
		n, _, _ := params.Param(0, 0)
		x, y := s.cur.x, s.cur.y
		switch n {
		case 0:
			e.fill(y, x, e.cols, e.blank())
			e.phantom = false
		case 1:
			e.fill(y, 0, x+1, e.blank())
		case 2:
			e.fill(y, 0, e.cols, e.blank())
		}
	case 'L':
		if e.insertLine(n1()) {
			e.setCursor(0, s.cur.y, true)
		}
	case 'M':
		if e.deleteLine(n1()) {
			e.setCursor(0, s.cur.y, true)
		}
	case 'P':
		e.deleteCell(n1())
	case 'S':
		e.scrollUp(n1())
	case 'T':
		e.scrollDown(n1())
	case 'X':
		n := n1()
		if n <= 0 {
			n = 1
		}
		e.fill(s.cur.y, s.cur.x, s.cur.x+n, e.blank())
		e.phantom = false
	case 'Z':
		e.prevTab(n1())
	case '`':
		e.goToOrigin(min(e.cols-1, n1()-1), s.cur.y)
	case 'a':
		e.goToOrigin(min(e.cols-1, s.cur.x+n1()), s.cur.y)
	case 'b':
		n, _, _ := params.Param(0, 1)
		if perScreen := e.cols * (e.rows + 1); n > perScreen {
			n = perScreen + (n-perScreen)%e.cols
		}
		if e.lastChar != 0 {
			for range n {
				e.printRune(e.lastChar)
			}
		}
	case 'c':
		if n, _, _ := params.Param(0, 0); n == 0 {
			e.t.flushStatusQueryLocked()
			e.t.reply("\x1b[?62;1;6;22c")
		}
	case 'd':
		e.goToOrigin(s.cur.x, min(e.rows-1, n1()-1))
	case 'e':
		e.goToOrigin(s.cur.x, min(e.rows-1, s.cur.y+n1()))
	case 'g':
		n, _, _ := params.Param(0, 0)
		switch n {
		case 0:
			if x := s.cur.x; x >= 0 && x < len(e.tabs) {
				e.tabs[x] = false
			}
		case 3:
			clear(e.tabs)
		}
	case 'h':
		e.setModes(params, true, true)
	case 'l':
		e.setModes(params, false, true)
	case 'm':
		sgr(params, &s.cur.pen)
		e.penOK = false
	case 'n':
		n, _, _ := params.Param(0, 0)
		switch n {
		case 5:
			e.t.reply("\x1b[0n")
		case 6:
			e.t.reply("\x1b[" + itoa(s.cur.y+1) + ";" + itoa(s.cur.x+1) + "R")
		}
	case 'r':
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
	case 's':
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
}

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
}

func (e *emulator) osc(cmd int, data []byte) {
	e.flush()
	t := e.t
	switch cmd {
	case 7501:
		body := oscBody(data)
		// ESC ] + data + at least a one-byte terminator.
		if 2+len(data)+1 > MaxStatusSequence {
			t.emit(Event{Kind: EventStatus, Oversize: true})
			return
		}
		if body == StatusQuery {
			t.flushStatusQueryLocked()
			t.statusQueryPending = true
			return
		}
		t.emit(Event{Kind: EventStatus, Text: body})
	case 0, 2:
		t.title = clipText(oscBody(data), MaxTitle)
		t.emit(Event{Kind: EventTitle, Text: t.title})
	case 9:
		t.tapNotify9(oscBody(data))
	case 777:
		t.tapNotify777(oscBody(data))
	case 99:
		_, payload, _ := cutString(oscBody(data), ";")
		t.emit(Event{Kind: EventNotify, NotifySource: "99", Text: clipText(payload, MaxNotifyText)})
	case 133:
		t.tapPromptMark(oscBody(data))
	case 10, 11, 12:
		if oscBody(data) == "?" {
			t.reply("\x1b]" + itoa(cmd) + ";" + defaultColour(cmd) + "\x1b\\")
		}
	case 8:
		e.hyperlink(data)
	}
}

// hyperlink is OSC 8 ; params ; url: the link is part of the pen.
func (e *emulator) hyperlink(data []byte) {
	var parts [3][]byte
	n := 0
	start := 0
	for i, b := range data {
		if b == ';' {
			if n == 2 {
				return // more than three parts
			}
			parts[n] = data[start:i]
			n++
			start = i + 1
		}
	}
	if n != 2 {
		return
	}
	parts[2] = data[start:]
	if len(parts[1])+len(parts[2]) > maxLinkLen {
		return
	}
	l := link{url: string(parts[2]), params: string(parts[1])}
	i, ok := e.linkIdx[l]
	if !ok {
		if len(e.links) >= maxLinks {
			e.compactLinks()
		}
		if len(e.links) >= maxLinks {
			return
		}
		i = uint16(len(e.links))
		e.links = append(e.links, l)
		e.linkIdx[l] = i
	}
	e.scr.cur.pen.link = i
	e.penOK = false
}

// --- reading ---

// appendCell appends a cell's text: nothing for the continuation of a wide
// character, a space for an empty cell.
func (e *emulator) appendCell(b []byte, c cell) []byte {
	switch {
	case c.r < utf8.RuneSelf && c.r > 0:
		return append(b, byte(c.r))
	case c.r == 0:
		if c.w == 0 {
			return b
		}
		return append(b, ' ')
	case c.r >= clusterBase:
		if i := int(c.r - clusterBase); i < len(e.clusters) {
			return append(b, e.clusters[i]...)
		}
		return append(b, ' ')
	}
	return utf8.AppendRune(b, c.r)
}

// appendRow appends row l's text, trailing spaces removed.
func (e *emulator) appendRow(b []byte, l []cell) []byte {
	start := len(b)
	b = slices.Grow(b, len(l))
	for _, c := range l {
		if c.r > 0 && c.r < utf8.RuneSelf {
			b = append(b, byte(c.r))
			continue
		}
		b = e.appendCell(b, c)
	}
	end := len(b)
	for end > start && b[end-1] == ' ' {
		end--
	}
	return b[:end]
}

func (e *emulator) rowText(y int) string {
	if y < 0 || y >= len(e.scr.lines) {
		return ""
	}
	e.scratch = e.appendRow(e.scratch[:0], e.scr.lines[y])
	return string(e.scratch)
}

func (e *emulator) uvStyle(i uint16) (uv.Style, uv.Link) {
	if int(i) >= len(e.styles) {
		i = 0
	}
	st := e.styles[i]
	var l uv.Link
	if st.link != 0 && int(st.link) < len(e.links) {
		l = uv.Link{URL: e.links[st.link].url, Params: e.links[st.link].params}
	}
	return uv.Style{Fg: st.fg.color(), Bg: st.bg.color(), UnderlineColor: st.ul.color(), Underline: st.under, Attrs: st.attrs}, l
}

// uvLines converts the visible screen to ultraviolet lines, for rendering
// it with escape sequences exactly as the reference did.
func (e *emulator) uvLines() uv.Lines {
	out := make(uv.Lines, len(e.scr.lines))
	var buf []byte
	blank := uv.Cell{Content: " ", Width: 1}
	for y, l := range e.scr.lines {
		line := make(uv.Line, e.cols)
		for x := len(l); x < e.cols; x++ {
			line[x] = blank
		}
		for x, c := range l {
			if c.r == 0 && c.w == 0 {
				continue
			}
			buf = e.appendCell(buf[:0], c)
			st, lk := e.uvStyle(c.st)
			line[x] = uv.Cell{Content: string(buf), Width: int(c.w), Style: st, Link: lk}
		}
		out[y] = line
	}
	return out
}

// scrollback is a bounded ring of history rows kept as text: the only way
// history is read. Slots are reused once the ring is full.
type scrollback struct {
	lines [][]byte
	start int
	max   int
}

func (sb *scrollback) push(e *emulator, l []cell) {
	if sb.max <= 0 {
		return
	}
	if len(sb.lines) < sb.max {
		// The text is built in the scratch buffer and kept in a slice of
		// its own size: built in place it would keep the room its growth
		// left (up to twice the text).
		e.scratch = e.appendRow(e.scratch[:0], l)
		sb.lines = append(sb.lines, append([]byte(nil), e.scratch...))
		return
	}
	sb.lines[sb.start] = e.appendRow(sb.lines[sb.start][:0], l)
	sb.start++
	if sb.start == len(sb.lines) {
		sb.start = 0
	}
}

func (sb *scrollback) len() int { return len(sb.lines) }

// line returns the i-th oldest row.
func (sb *scrollback) line(i int) []byte {
	return sb.lines[(sb.start+i)%len(sb.lines)]
}

func (sb *scrollback) clear() { sb.lines, sb.start = nil, 0 }

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

func cutString(s, sep string) (before, after string, found bool) {
	for i := 0; i+len(sep) <= len(s); i++ {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}
