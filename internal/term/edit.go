package term

// Editing the screen's rows: scrolling, inserting and deleting lines and
// cells, erasing.

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
	e.unpackRows()
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
	e.unpackRows()
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
	s.useRow(src, e.cols)
	s.useRow(dst, e.cols)
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
	s.useRow(y, e.cols)
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
	s.useRow(y, cols)
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
		e.unpackRows()
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

// eraseLine is EL: the row from the cursor (0), up to it (1) or all of
// it (2).
func (e *emulator) eraseLine(n int) {
	s := e.scr
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
}

// eraseChars is ECH: n cells from the cursor on (at least one) become
// blanks.
func (e *emulator) eraseChars(n int) {
	s := e.scr
	if n <= 0 {
		n = 1
	}
	e.fill(s.cur.y, s.cur.x, s.cur.x+n, e.blank())
	e.phantom = false
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
	e.unpackRows()
	s := e.scr
	for y, l := range s.lines {
		s.lines[y] = l[:0]
	}
	s.touchRange(0, len(s.lines))
}
