package term

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
	// The packing (pack.go): nil for a screen never packed, apart, so
	// that the fields the writing touches stay together.
	*screenPack
}

type screenPack struct {
	// pack holds the rows packed while the emulator is (lines is nil then),
	// and packText the rows' text it refers to.
	pack     []byte
	packText []string
	// rowBuf holds the rows packed one by one (packRows) while the rest
	// of the screen is written, one after another: row y's packing is
	// rowBuf[rowAt[2y]:rowAt[2y+1]] (an end of 0: not packed) and
	// lines[y] is nil, until useRow unpacks it. One buffer, not a slice a
	// row: a table of slices costs 24 bytes a row, and each row's few
	// bytes an allocation of their own. nil when no row is packed.
	// rowText[y] is the text its packing refers to; used marks the rows
	// used since the last packRows (nil: all of them).
	rowBuf  []byte
	rowAt   []uint32
	rowText []string
	used    []uint64
	nPacked int
}

// useRow makes row y's cells there to be read and written, and marks it
// used: every edit of one row calls it first. y must be on the screen.
func (s *screen) useRow(y, cols int) {
	if s.screenPack != nil { // nil until packRows counts, and no row is packed
		s.markUsed(y, cols)
	}
}

func (s *screen) markUsed(y, cols int) {
	if s.rowAt != nil && s.rowAt[2*y+1] != 0 {
		s.unpackRow(y, cols)
	}
	if s.used != nil {
		s.used[y>>6] |= 1 << (y & 63)
	}
}

// hasPackedRows reports whether a row is packed on its own.
func (s *screen) hasPackedRows() bool {
	return s.screenPack != nil && s.nPacked > 0
}

// rowPacked reports whether row y is packed on its own.
func (s *screen) rowPacked(y int) bool {
	return s.screenPack != nil && s.rowAt != nil && s.rowAt[2*y+1] != 0
}

// rowPacking is row y's packing; the row must be packed.
func (s *screen) rowPacking(y int) []byte {
	return s.rowBuf[s.rowAt[2*y]:s.rowAt[2*y+1]]
}

// rowsPacked counts the rows packed one by one.
func (s *screen) rowsPacked() int {
	if s.screenPack == nil {
		return 0
	}
	return s.nPacked
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

// inRegion reports whether column x of row y is inside the scroll region.
func (s *screen) inRegion(x, y int) bool {
	return x >= s.left && x < s.right && y >= s.top && y < s.bottom
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
