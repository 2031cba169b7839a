package term

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
