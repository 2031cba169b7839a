package term

import "strings"

// StripEscapes removes escape sequences (CSI, OSC, DCS, APC, PM, SOS and
// two-byte escapes) and control characters other than \n, \r and \t.
func StripEscapes(b []byte) string {
	var out strings.Builder
	out.Grow(len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != 0x1b {
			if c >= 0x20 || c == '\n' || c == '\r' || c == '\t' {
				out.WriteByte(c)
			}
			continue
		}
		if i+1 >= len(b) {
			break
		}
		i++
		switch b[i] {
		case '[': // CSI: parameters, then a final byte 0x40–0x7E
			for i+1 < len(b) {
				i++
				if b[i] >= 0x40 && b[i] <= 0x7e {
					break
				}
			}
		case ']', 'P', 'X', '^', '_': // strings, ended by BEL or ST
			for i+1 < len(b) {
				i++
				if b[i] == 0x07 {
					break
				}
				if b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\' {
					i++
					break
				}
			}
		case '(', ')', '*', '+', '#', '%': // designations: one more byte
			i++
		}
	}
	return out.String()
}
