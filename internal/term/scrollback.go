package term

import (
	"bytes"
	"compress/lzw"
	"encoding/binary"
	"io"
	"slices"
	"sync"
)

// scrollback is a bounded ring of history rows kept as text: the only way
// history is read. The rows' text is packed one after another in one
// buffer, each row a 4-byte offset: a row of its own slice cost its
// 24-byte header and its size class's rounding on top of its text (about
// half of a short row's cost).
type scrollback struct {
	text []byte
	// starts holds where each row begins in text; the live rows are
	// starts[first:], the ones before them dropped and not yet compacted
	// away.
	starts []uint32
	first  int
	max    int
	// z is text compressed, the rows' lengths after it, while the
	// history is settled (text and starts are nil then); zlen is text's
	// length, zrows the number of rows; see squeeze.
	z     []byte
	zlen  int
	zrows int
	// unpushed counts the calls to settle since the last row pushed.
	unpushed uint8
}

func (sb *scrollback) push(e *emulator, l []cell) {
	if sb.max <= 0 {
		return
	}
	sb.open()
	sb.unpushed = 0
	if sb.len() == sb.max {
		sb.first++ // the oldest row goes
		sb.compact()
	}
	sb.starts = append(sb.starts, uint32(len(sb.text)))
	sb.text = e.appendRow(sb.text, l)
}

// compact moves the live rows to the front of the buffers once the
// dropped ones take a quarter of what is live: the copy is then paid by
// that many pushes, and at most a quarter more than the live text is
// held.
func (sb *scrollback) compact() {
	live := len(sb.starts) - sb.first
	if sb.first*4 < live {
		return
	}
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

func (sb *scrollback) len() int {
	if sb.z != nil {
		return sb.zrows
	}
	return len(sb.starts) - sb.first
}

// historyLine returns the i-th oldest row of a view's text and starts,
// valid until the next push.
func historyLine(text []byte, starts []uint32, i int) []byte {
	end := len(text)
	if i+1 < len(starts) {
		end = int(starts[i+1])
	}
	return text[starts[i]:end:end]
}

func (sb *scrollback) clear() {
	sb.text, sb.starts, sb.first = nil, nil, 0
	sb.z, sb.zlen, sb.zrows = nil, 0, 0
}

// squeezeMin is the least history worth compressing: below it the
// compressor's work and the compressed form's header buy little.
const squeezeMin = 2 << 10

// squeeze compresses the history's text and its rows' offsets while the
// terminal is packed (idle) or settled: a transcript's rows are words and
// rules, about half their size or less compressed, and the offsets (4
// bytes a row) become their rows' lengths, a byte or two each before
// compression. LZW, not flate: its coder's tables are ~20 KB, not ~600
// KB, and a thousand panes going idle would make that garbage each. Kept
// only if it saves a quarter.
func (sb *scrollback) squeeze() {
	if sb.z != nil || len(sb.text) < squeezeMin {
		return
	}
	live := sb.starts[sb.first:]
	if len(live) == 0 {
		return
	}
	text := sb.text[live[0]:]
	lengths := make([]byte, 0, 2*len(live))
	for i := range live {
		lengths = binary.AppendUvarint(lengths, uint64(len(historyLine(sb.text, live, i))))
	}
	var buf bytes.Buffer
	buf.Grow(len(text) / 2)
	w := lzwWriters.Get().(*lzw.Writer)
	w.Reset(&buf, lzw.MSB, 8)
	_, err := w.Write(text)
	if err == nil {
		_, err = w.Write(lengths)
	}
	if err == nil {
		err = w.Close()
	}
	lzwWriters.Put(w)
	if err != nil || buf.Len() > (len(text)+4*len(live))*3/4 {
		return
	}
	sb.z, sb.zlen, sb.zrows = slices.Clone(buf.Bytes()), len(text), len(live)
	sb.text, sb.starts, sb.first = nil, nil, 0
}

// settleCalls is how many calls to settle in a row find no row pushed
// before the history is compressed: with a call every few seconds, a
// history that takes a row now and then is not compressed and opened
// again at each one.
const settleCalls = 2

// settle compresses, as an idle terminal's, the history of a terminal
// that is still written to but pushed no row to its history for
// settleCalls calls: a program that redraws in place (a spinner, a clock,
// a full-screen program) writes no history, and its rows would stay text
// for as long as it draws.
func (sb *scrollback) settle() {
	if sb.unpushed < settleCalls {
		sb.unpushed++
		return
	}
	sb.shrink()
	sb.squeeze()
}

// open gives the history its text back, for writing.
func (sb *scrollback) open() {
	if sb.z == nil {
		return
	}
	sb.text, sb.starts = sb.inflate()
	sb.first = 0
	sb.z, sb.zlen, sb.zrows = nil, 0, 0
}

// view is the history's text and its live rows' offsets for a read (see
// historyLine): compressed, a copy made for it alone (the history stays
// compressed).
func (sb *scrollback) view() ([]byte, []uint32) {
	if sb.z == nil {
		return sb.text, sb.starts[sb.first:]
	}
	return sb.inflate()
}

// size is the length of the history's text.
func (sb *scrollback) size() int {
	if sb.z != nil {
		return sb.zlen
	}
	return len(sb.text)
}

func (sb *scrollback) inflate() ([]byte, []uint32) {
	r := lzwReaders.Get().(*lzw.Reader)
	defer lzwReaders.Put(r)
	r.Reset(bytes.NewReader(sb.z), lzw.MSB, 8)
	text := make([]byte, sb.zlen)
	if _, err := io.ReadFull(r, text); err != nil {
		panic("term: history: " + err.Error()) // our own bytes
	}
	lengths, err := io.ReadAll(r)
	if err != nil {
		panic("term: history: " + err.Error())
	}
	starts := make([]uint32, sb.zrows)
	off := 0
	for i := range starts {
		n, w := binary.Uvarint(lengths)
		if w <= 0 {
			panic("term: history: a row's length is missing")
		}
		starts[i], off, lengths = uint32(off), off+int(n), lengths[w:]
	}
	if off != len(text) {
		panic("term: history: the rows' lengths do not add up to the text")
	}
	return text, starts
}

// The coders are pooled: panes go idle one after another.
var (
	lzwWriters = sync.Pool{New: func() any { return lzw.NewWriter(nil, lzw.MSB, 8) }}
	lzwReaders = sync.Pool{New: func() any { return lzw.NewReader(nil, lzw.MSB, 8) }}
)
