package term

// Printing: pending grapheme clusters, charsets, and writing cells into
// sparse rows.

import (
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

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
	s.useRow(y, cols)
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
			s.useRow(y, cols)
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
	if i, ok := e.clusterIndex()[string(b)]; ok {
		return clusterBase + i
	}
	if len(e.clusters) >= e.tableLimit() {
		e.compactClusters()
		if len(e.clusters) >= e.tableLimit() {
			return utf8.RuneError
		}
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
	s.useRow(y, cols)
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
	s.useRow(y, cols)
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
