package term

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
}

func (sb *scrollback) push(e *emulator, l []cell) {
	if sb.max <= 0 {
		return
	}
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

// line returns the i-th oldest row, valid until the next push.
func (sb *scrollback) line(i int) []byte {
	j := sb.first + i
	end := len(sb.text)
	if j+1 < len(sb.starts) {
		end = int(sb.starts[j+1])
	}
	return sb.text[sb.starts[j]:end:end]
}

func (sb *scrollback) clear() { sb.text, sb.starts, sb.first = nil, nil, 0 }
