package cli

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// rawOutput are the commands whose output is a terminal's own bytes: the
// attached pane, the boards, a status report, the screen in colour, the
// holder's wire, a hook's answer to its agent. Every other command's output
// goes through safeWriter.
var rawOutput = map[string]bool{
	"attach": true, "board": true, "demo": true, "status": true, "fake-agent": true,
	"hold": true, "hook": true, "screen": true, "exec": true, "__complete": true, "__completeNoDesc": true,
}

// safeWriter makes what corral prints safe for the terminal it prints to:
// names, messages, titles, versions and errors come from panes and from
// other hosts, and an escape sequence in one (OSC 52 sets the clipboard,
// OSC 0 the window title, CSI 2J clears the screen) must not reach the
// terminal. Control characters but newline and tab, DEL, the C1 controls
// (U+0080–U+009F, which some terminals obey like ESC [) and the bidi
// overrides are written as Go-style escapes ("\x1b", "\u009b"); in JSON,
// where C0 is escaped already, the C1 and bidi escapes it writes are JSON's
// own, so the JSON stays valid and means the same.
type safeWriter struct {
	w       io.Writer
	pending []byte // the start of a UTF-8 sequence cut by the end of a write
}

func (s *safeWriter) Write(b []byte) (int, error) {
	n := len(b)
	if len(s.pending) > 0 {
		b = append(s.pending, b...)
		s.pending = nil
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				out = fmt.Appendf(out, `\x%02x`, c)
			} else {
				out = append(out, c)
			}
			i++
			continue
		}
		if !utf8.FullRune(b[i:]) {
			s.pending = append([]byte(nil), b[i:]...)
			break
		}
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, "\uFFFD"...)
		case (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	if _, err := s.w.Write(out); err != nil {
		return 0, err
	}
	return n, nil
}

// safeIO wraps a command's output in safeWriter unless the command's
// output is a terminal's own bytes; its errors always are.
func safeIO(name string, std IO) IO {
	if std.Stderr != nil {
		std.Stderr = &safeWriter{w: std.Stderr}
	}
	if !rawOutput[name] && std.Stdout != nil {
		std.Stdout = &safeWriter{w: std.Stdout}
	}
	return std
}
