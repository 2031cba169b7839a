package cli

import (
	"bytes"
	"errors"
)

// indentCompact indents compact JSON (no white space outside strings, as
// encoding/json writes it) as json.Indent(dst, src, "", "  ") would, byte
// for byte, in one pass without the scanner's call a byte: a thousand
// panes are a megabyte. It checks only what a cut answer breaks (a string
// or a bracket left open, a closing one too many); white space outside a
// string is an error, for the caller to indent the slow way.
func indentCompact(dst *bytes.Buffer, src []byte) error {
	depth := 0
	open := false // a { or [ was written and its first element not yet
	newline := func() {
		dst.WriteByte('\n')
		for range depth {
			dst.WriteString("  ")
		}
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		if open && c != '}' && c != ']' {
			open = false
			depth++
			newline()
		}
		switch c {
		case '"':
			j := i + 1
			for ; j < len(src); j++ {
				if src[j] == '\\' {
					j++
				} else if src[j] == '"' {
					break
				}
			}
			if j >= len(src) {
				return errors.New("a string not closed")
			}
			dst.Write(src[i : j+1])
			i = j
		case '{', '[':
			dst.WriteByte(c)
			open = true
		case '}', ']':
			if open {
				open = false // empty: {} or []
				dst.WriteByte(c)
				continue
			}
			if depth == 0 {
				return errors.New("a closing bracket too many")
			}
			depth--
			newline()
			dst.WriteByte(c)
		case ',':
			dst.WriteByte(',')
			newline()
		case ':':
			dst.WriteString(": ")
		case ' ', '\t', '\n', '\r':
			return errors.New("not compact")
		default:
			// A number, true, false or null: up to the next delimiter.
			j := i
			for j < len(src) && !delimiter(src[j]) {
				j++
			}
			dst.Write(src[i:j])
			i = j - 1
		}
	}
	if depth != 0 || open {
		return errors.New("a bracket not closed")
	}
	return nil
}

func delimiter(c byte) bool {
	switch c {
	case ',', ':', '[', ']', '{', '}', '"', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}
