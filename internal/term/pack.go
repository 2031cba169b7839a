package term

// Packing an idle terminal: the visible screens' cells as bytes, and the
// tables and buffers only writing needs dropped, until the next write.

import (
	"encoding/binary"
	"slices"

	"github.com/charmbracelet/x/ansi/parser"
)

// A packed screen is its rows one after another, each ended by opEnd.
// A plain ASCII cell (width 1) is its byte, in the style of the last
// opStyle of the row (0 at its start); every other cell is an op:
const (
	opStyle  = 0x01 // uvarint index: the style of the cells that follow
	opCell   = 0x02 // uvarint rune, then its width: a cell not plain ASCII
	opRepeat = 0x03 // uvarint n: the cell before, n more times
	opTail   = 0x04 // the right half of a wide character (rune 0, width 0)
	opEnd    = '\n'
	// opText, first in a row, says its cells are its text (the row's
	// string the terminal keeps for Snapshot: shared, not copied) read a
	// rune a cell at the rune's own width, padded with blanks to the
	// uvarint count that follows; then the styles, as pairs of uvarints
	// (index, cells) up to that count.
	opText = 0x05
)

// appendPacked appends lines packed. The packing is lossless: unpack
// gives back every cell of every row, a row's length included (trailing
// blanks are cells a checkpoint draws); only the rows' capacities are
// lost.
//
// text, when not nil, holds the rows' text (appendRow): a row that its
// text spells is packed as opText.
func appendPacked(b []byte, lines [][]cell, text []string) []byte {
	for y, l := range lines {
		if text != nil && len(l) > 0 && spells(text[y], l) {
			b = append(b, opText)
			b = binary.AppendUvarint(b, uint64(len(l)))
			for i := 0; i < len(l); {
				j := i + 1
				for j < len(l) && l[j].st == l[i].st {
					j++
				}
				b = binary.AppendUvarint(b, uint64(l[i].st))
				b = binary.AppendUvarint(b, uint64(j-i))
				i = j
			}
			b = append(b, opEnd)
			continue
		}
		st := uint16(0)
		for i := 0; i < len(l); {
			c := l[i]
			if c.st != st {
				b = append(b, opStyle)
				b = binary.AppendUvarint(b, uint64(c.st))
				st = c.st
			}
			short := true // one byte
			switch {
			case c.w == 1 && c.r >= 0x20 && c.r < 0x7f:
				b = append(b, byte(c.r))
			case c.r == 0 && c.w == 0:
				b = append(b, opTail)
			default:
				b = append(b, opCell)
				b = binary.AppendUvarint(b, uint64(uint32(c.r)))
				b = append(b, c.w)
				short = false
			}
			j := i + 1
			for j < len(l) && l[j] == c {
				j++
			}
			// A repeat costs two bytes or more: worth it for a rule of
			// box-drawing characters or a run of blanks.
			if n := j - i - 1; n >= 3 || (n >= 1 && !short) {
				b = append(b, opRepeat)
				b = binary.AppendUvarint(b, uint64(n))
				i = j
			} else {
				i++
			}
		}
		b = append(b, opEnd)
	}
	return b
}

// spells reports whether row l is its text s read as opText reads it.
func spells(s string, l []cell) bool {
	i := 0
	for _, r := range s {
		w := 1
		if r >= 0x80 {
			w = int(runeInfo(r) & infoWidthMask)
		}
		if w == 0 || i >= len(l) || l[i].r != r || int(l[i].w) != w {
			return false
		}
		i++
		if w == 2 {
			if i >= len(l) || l[i].r != 0 || l[i].w != 0 {
				return false
			}
			i++
		}
	}
	for ; i < len(l); i++ {
		if l[i].r != ' ' || l[i].w != 1 {
			return false
		}
	}
	return true
}

// textCells appends the cells opText reads from s: n in all.
func textCells(row []cell, s string, n int) []cell {
	for _, r := range s {
		w := 1
		if r >= 0x80 {
			w = int(runeInfo(r) & infoWidthMask)
		}
		row = append(row, cell{r: r, w: uint8(w)})
		if w == 2 {
			row = append(row, cell{})
		}
	}
	for len(row) < n {
		row = append(row, cell{r: ' ', w: 1})
	}
	return row
}

// unpackLines is appendPacked's inverse: rows rows of at most cols cells,
// each with the capacity a row of its length is given (rowCap); text is
// what appendPacked was given.
func unpackLines(b []byte, rows, cols int, text []string) [][]cell {
	lines := newLines(rows)
	row := make([]cell, 0, cols)
	y := 0
	st := uint16(0)
	for i := 0; i < len(b) && y < rows; {
		op := b[i]
		i++
		switch {
		case op >= 0x20 && op < 0x7f:
			row = append(row, cell{r: rune(op), st: st, w: 1})
		case op == opStyle:
			v, n := binary.Uvarint(b[i:])
			i += n
			st = uint16(v)
		case op == opCell:
			v, n := binary.Uvarint(b[i:])
			i += n
			row = append(row, cell{r: rune(int32(uint32(v))), st: st, w: b[i]})
			i++
		case op == opRepeat:
			v, n := binary.Uvarint(b[i:])
			i += n
			c := row[len(row)-1]
			for range v {
				row = append(row, c)
			}
		case op == opTail:
			row = append(row, cell{st: st})
		case op == opText:
			v, n := binary.Uvarint(b[i:])
			i += n
			row = textCells(row, text[y], int(v))
			for x := 0; x < len(row); {
				st, n := binary.Uvarint(b[i:])
				i += n
				k, n := binary.Uvarint(b[i:])
				i += n
				if k == 0 {
					break // not written so
				}
				for end := x + int(k); x < end; x++ {
					row[x].st = uint16(st)
				}
			}
		case op == opEnd:
			if len(row) > 0 {
				lines[y] = append(make([]cell, 0, rowCap(len(row), cols)), row...)
			}
			row = row[:0]
			st = 0
			y++
		}
	}
	return lines
}

// pack replaces the cells of the screens in use (the main one, and the
// alternate one while it is shown) with their packing, and drops what
// only writing needs: the style cache, the tables' indexes (rebuilt from
// the tables on the next write that needs one), scratch buffers, the
// parser's string buffer and the history's spare room.
//
// text is the shown screen's rows' text, which the packing shares: the
// caller keeps it as it is until unpack.
func (e *emulator) pack(text []string) {
	if e.packed {
		return
	}
	e.unpackRows()
	for _, s := range []*screen{&e.main, &e.alt} {
		if s.lines == nil {
			continue
		}
		if s.screenPack == nil {
			s.screenPack = &screenPack{}
		}
		s.packText = nil
		if s == e.scr && len(text) == len(s.lines) {
			s.packText = text
		}
		e.scratch = appendPacked(e.scratch[:0], s.lines, s.packText)
		s.pack = append(make([]byte, 0, len(e.scratch)), e.scratch...)
		s.lines = nil
	}
	e.packed = true
	e.scratch = nil
	e.styleCache = nil
	e.styleIdx, e.linkIdx, e.clusterIdx = nil, nil, nil
	if len(e.pend) == 0 {
		e.pend = nil
	}
	if e.p.State() == parser.GroundState && e.strLen == 0 {
		e.p.SetDataSize(-1) // as new: the buffer of the longest string seen goes
	}
	e.sb.shrink()
	e.sb.squeeze()
}

// unpack gives the screens their cells back, every row's.
func (e *emulator) unpack() {
	e.unpackRows()
	e.unpackScreens()
}

// unpackScreens undoes pack; rows packed one by one stay so until used.
func (e *emulator) unpackScreens() {
	if !e.packed {
		return
	}
	e.sb.open()
	for _, s := range []*screen{&e.main, &e.alt} {
		if s.screenPack != nil && s.pack != nil {
			s.lines = unpackLines(s.pack, e.rows, e.cols, s.packText)
			s.pack, s.packText = nil, nil
			if s.used == nil && s.rowAt == nil {
				s.screenPack = nil
			}
		}
	}
	e.packed = false
}

// peek gives a packed terminal's screens cells for a read that needs them
// and returns what packs them again (dropping those cells): reads do not
// change cells, so the packing stays what it was.
func (e *emulator) peek() (repack func()) {
	if !e.packed {
		if !e.main.hasPackedRows() && !e.alt.hasPackedRows() {
			return func() {}
		}
		// Rows packed one by one: their cells for the read, then nil
		// again.
		for _, s := range []*screen{&e.main, &e.alt} {
			for y := range s.lines {
				if s.rowPacked(y) {
					s.lines[y] = unpackLines(s.rowPacking(y), 1, e.cols, s.rowText[y:y+1])[0]
				}
			}
		}
		return func() {
			for _, s := range []*screen{&e.main, &e.alt} {
				for y := range s.lines {
					if s.rowPacked(y) {
						s.lines[y] = nil
					}
				}
			}
		}
	}
	for _, s := range []*screen{&e.main, &e.alt} {
		if s.screenPack != nil && s.pack != nil {
			s.lines = unpackLines(s.pack, e.rows, e.cols, s.packText)
		}
	}
	e.packed = false
	return func() {
		e.scratch = nil
		for _, s := range []*screen{&e.main, &e.alt} {
			if s.screenPack != nil && s.pack != nil {
				s.lines = nil
			}
		}
		e.packed = true
	}
}

// packRows packs each row of the shown screen not used since the last
// call (and not empty) on its own: a screen that is written a row or two
// at a time (a spinner, a clock) keeps the rest packed. text is the rows'
// text, as for pack.
func (e *emulator) packRows(text []string) {
	s := e.scr
	if e.packed || len(text) != len(s.lines) {
		return
	}
	if s.screenPack == nil {
		s.screenPack = &screenPack{}
	}
	if s.used == nil {
		// Used since when is not known: all of them, this time.
		s.used = make([]uint64, (len(s.lines)+63)/64)
		if s == &e.main && e.p.State() == parser.GroundState {
			// The parser's parameters (256 bytes) move to a new array,
			// once: the first was made when the pane started, among
			// the 256-byte arrays of the rows the screen was first drawn
			// with (its own and other panes' starting at the same time),
			// which packing frees; alone, it kept their span of the heap
			// (at 300 spinner panes, 143 spans of 8 KB held 331 arrays).
			// Made now, seconds later, it goes where such arrays were
			// freed. The parser keeps nothing in it between sequences.
			e.p.SetParamsSize(parser.MaxParamsSize)
		}
		return
	}
	s.packRowsUnused(e, text)
	clear(s.used)
	// A row left as cells (drawn since the last call: a spinner's, a
	// clock's) moves to an array of its own length. Its array was made
	// with room to grow while the screen was first drawn, among the
	// arrays of rows packed since and of other panes' screens drawn at the
	// same moment: alone, it kept a whole span of the heap from being
	// given back (at 300 spinner panes, 1.6 MB of spans of 256-byte
	// arrays held one row each).
	for y, l := range s.lines {
		if len(l) > 0 && cap(l) > len(l) {
			s.lines[y] = slices.Clip(append([]cell(nil), l...))
		}
	}
}

// packRowsUnused packs the rows of s not used since the last packRows
// (and not empty) into a new rowBuf, after the rows packed before, in the
// order of the rows; the bytes of rows unpacked since are left out.
func (s *screen) packRowsUnused(e *emulator, text []string) {
	fresh, live := 0, 0
	for y, l := range s.lines {
		if len(l) > 0 && s.used[y>>6]&(1<<(y&63)) == 0 {
			fresh++
		} else if s.rowPacked(y) {
			live += int(s.rowAt[2*y+1] - s.rowAt[2*y])
		}
	}
	if fresh == 0 && live >= len(s.rowBuf)/2 {
		return // the bytes of rows unpacked since stay until then
	}
	if s.rowAt == nil {
		s.rowAt = make([]uint32, 2*len(s.lines))
		s.rowText = make([]string, len(s.lines))
	}
	b := e.scratch[:0]
	for y, l := range s.lines {
		start := len(b)
		switch {
		case len(l) > 0 && s.used[y>>6]&(1<<(y&63)) == 0:
			b = appendPacked(b, s.lines[y:y+1], text[y:y+1])
			if b[start] == opText {
				s.rowText[y] = text[y]
			}
			s.lines[y] = nil
			s.nPacked++
		case s.rowPacked(y):
			b = append(b, s.rowPacking(y)...)
		default:
			continue
		}
		s.rowAt[2*y], s.rowAt[2*y+1] = uint32(start), uint32(len(b))
	}
	if s.nPacked == 0 {
		s.rowBuf, s.rowAt, s.rowText = nil, nil, nil
	} else {
		s.rowBuf = append(make([]byte, 0, len(b)), b...)
	}
	// The scratch buffer stays for the next row's text, unless it grew
	// past a row's.
	if cap(b) <= e.cols {
		e.scratch = b
	} else {
		e.scratch = nil
	}
}

// unpackRow gives row y, packed by packRows, its cells back.
func (s *screen) unpackRow(y, cols int) {
	s.lines[y] = unpackLines(s.rowPacking(y), 1, cols, s.rowText[y:y+1])[0]
	s.rowAt[2*y], s.rowAt[2*y+1], s.rowText[y] = 0, 0, ""
	s.nPacked--
	if s.nPacked == 0 {
		s.rowBuf, s.rowAt, s.rowText = nil, nil, nil
	}
}

// unpackRows gives every row packed by packRows its cells back, for an
// edit of many rows (a scroll, a clear, a resize, a table's compaction),
// and counts every row used.
func (e *emulator) unpackRows() {
	if e.main.screenPack != nil || e.alt.screenPack != nil {
		e.unpackAllRows()
	}
}

func (e *emulator) unpackAllRows() {
	for _, s := range []*screen{&e.main, &e.alt} {
		if s.screenPack == nil {
			continue
		}
		if s.used != nil {
			for i := range s.used {
				s.used[i] = ^uint64(0)
			}
		}
		for y := range s.lines {
			if s.rowPacked(y) {
				s.unpackRow(y, e.cols)
			}
		}
	}
}

// shrink drops the rows already dropped and the room for more: an idle
// terminal's history costs its text and offsets, no more.
func (sb *scrollback) shrink() {
	if sb.first > 0 {
		dead := len(sb.text)
		if sb.first < len(sb.starts) {
			dead = int(sb.starts[sb.first])
		}
		sb.text = sb.text[:copy(sb.text, sb.text[dead:])]
		sb.starts = sb.starts[:copy(sb.starts, sb.starts[sb.first:])]
		for i := range sb.starts {
			sb.starts[i] -= uint32(dead)
		}
		sb.first = 0
	}
	if len(sb.starts) == 0 {
		sb.text, sb.starts = nil, nil
		return
	}
	if cap(sb.text) > len(sb.text) {
		sb.text = slices.Clone(sb.text)
	}
	if cap(sb.starts) > len(sb.starts) {
		sb.starts = slices.Clone(sb.starts)
	}
}

// The indexes of the tables, rebuilt after pack dropped them. Where a
// table holds an entry twice (links renumbered by compactLinks), the
// first index is the one kept, as compactLinks keeps it.

func (e *emulator) styleIndex() map[style]uint16 {
	if e.styleIdx == nil {
		e.rebuildStyleIndex()
	}
	return e.styleIdx
}

func (e *emulator) linkIndex() map[link]uint16 {
	if e.linkIdx == nil {
		e.rebuildLinkIndex()
	}
	return e.linkIdx
}

func (e *emulator) clusterIndex() map[string]int32 {
	if e.clusterIdx == nil {
		e.rebuildClusterIndex()
	}
	return e.clusterIdx
}

//go:noinline
func (e *emulator) rebuildStyleIndex() {
	e.styleIdx = make(map[style]uint16, len(e.styles))
	for i := len(e.styles) - 1; i >= 0; i-- {
		e.styleIdx[e.styles[i]] = uint16(i)
	}
}

//go:noinline
func (e *emulator) rebuildLinkIndex() {
	e.linkIdx = make(map[link]uint16, len(e.links))
	for i := len(e.links) - 1; i >= 0; i-- {
		e.linkIdx[e.links[i]] = uint16(i)
	}
}

//go:noinline
func (e *emulator) rebuildClusterIndex() {
	e.clusterIdx = make(map[string]int32, len(e.clusters))
	for i := len(e.clusters) - 1; i >= 0; i-- {
		e.clusterIdx[e.clusters[i]] = int32(i)
	}
}
