package term

import (
	"bytes"
	"compress/lzw"
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
	// z is text compressed while the terminal is packed (text is nil
	// then), zlen text's length; see squeeze.
	z    []byte
	zlen int
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

func (sb *scrollback) len() int { return len(sb.starts) - sb.first }

// line returns the i-th oldest row of text (view's), valid until the next
// push.
func (sb *scrollback) line(text []byte, i int) []byte {
	j := sb.first + i
	end := len(text)
	if j+1 < len(sb.starts) {
		end = int(sb.starts[j+1])
	}
	return text[sb.starts[j]:end:end]
}

func (sb *scrollback) clear() {
	sb.text, sb.starts, sb.first = nil, nil, 0
	sb.z, sb.zlen = nil, 0
}

// squeezeMin is the least history worth compressing: below it the
// compressor's work and the compressed form's header buy little.
const squeezeMin = 2 << 10

// squeeze compresses the history's text while the terminal is packed
// (idle): a transcript's rows are words and rules, about half their size
// or less compressed. LZW, not flate: its coder's tables are ~20 KB, not
// ~600 KB, and a thousand panes going idle would make that garbage each.
// Kept only if it saves a quarter.
func (sb *scrollback) squeeze() {
	if sb.z != nil || len(sb.text) < squeezeMin {
		return
	}
	var buf bytes.Buffer
	buf.Grow(len(sb.text) / 2)
	w := lzwWriters.Get().(*lzw.Writer)
	w.Reset(&buf, lzw.MSB, 8)
	_, err := w.Write(sb.text)
	if err == nil {
		err = w.Close()
	}
	lzwWriters.Put(w)
	if err != nil || buf.Len() > len(sb.text)*3/4 {
		return
	}
	sb.z, sb.zlen = slices.Clone(buf.Bytes()), len(sb.text)
	sb.text = nil
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
	sb.text = sb.inflate()
	sb.z, sb.zlen = nil, 0
}

// view is the history's text for a read: compressed, a copy made for it
// alone (the terminal stays packed).
func (sb *scrollback) view() []byte {
	if sb.z == nil {
		return sb.text
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

func (sb *scrollback) inflate() []byte {
	r := lzwReaders.Get().(*lzw.Reader)
	defer lzwReaders.Put(r)
	r.Reset(bytes.NewReader(sb.z), lzw.MSB, 8)
	text := make([]byte, sb.zlen)
	if _, err := io.ReadFull(r, text); err != nil {
		panic("term: history: " + err.Error()) // our own bytes
	}
	return text
}

// The coders are pooled: panes go idle one after another.
var (
	lzwWriters = sync.Pool{New: func() any { return lzw.NewWriter(nil, lzw.MSB, 8) }}
	lzwReaders = sync.Pool{New: func() any { return lzw.NewReader(nil, lzw.MSB, 8) }}
)
