package term

import "unicode/utf8"

// sanitizeLocked makes the bytes valid UTF-8 before the screen sees them.
// NOTE: the ansi parser, in the middle of a multi-byte character,
// takes the next byte as part of it whatever it is: a lead byte left alone
// by garbage output swallowed the ESC after it, and with it the reset a
// program sent to recover ("\xd3" then "ESC c" printed "c" and lost the
// reset). Raw C1 bytes (0x80–0x9F) are not controls in a UTF-8 terminal
// either. So every byte that is not part of a valid character becomes
// U+FFFD; a character split across two writes is held until it completes.
func (t *Terminal) sanitizeLocked(p []byte) []byte {
	if len(t.utf8Tail) == 0 && utf8.Valid(p) {
		return p
	}
	buf := append(t.utf8Tail, p...)
	t.utf8Tail = nil
	out := make([]byte, 0, len(buf)+8)
	for i := 0; i < len(buf); {
		c := buf[i]
		if c < utf8.RuneSelf {
			out = append(out, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(buf[i:])
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(buf[i:]) {
				// An incomplete character at the end: wait for the rest.
				t.utf8Tail = append([]byte(nil), buf[i:]...)
				break
			}
			out = append(out, "\uFFFD"...)
			i++
			continue
		}
		out = append(out, buf[i:i+size]...)
		i += size
	}
	return out
}
