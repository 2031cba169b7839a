package term

// Cursor movement and tab stops.

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

// tabSet is HTS: a tab stop at the cursor's column.
func (e *emulator) tabSet() {
	if x := e.scr.cur.x; x >= 0 && x < len(e.tabs) {
		e.tabs[x] = true
	}
}
