package holder

// ring keeps the newest n bytes written to it.
type ring struct {
	buf  []byte
	next int  // where the next byte goes
	full bool // buf has wrapped
}

func newRing(n int) *ring { return &ring{buf: make([]byte, n)} }

func (r *ring) write(p []byte) {
	if len(p) >= len(r.buf) {
		copy(r.buf, p[len(p)-len(r.buf):])
		r.next, r.full = 0, true
		return
	}
	n := copy(r.buf[r.next:], p)
	if n < len(p) {
		copy(r.buf, p[n:])
		r.full = true
	}
	r.next = (r.next + len(p)) % len(r.buf)
	if r.next == 0 && n == len(p) && len(p) > 0 {
		r.full = true
	}
}

// bytes returns a copy of what the ring holds, oldest first.
func (r *ring) bytes() []byte {
	if !r.full {
		return append([]byte(nil), r.buf[:r.next]...)
	}
	out := make([]byte, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}
