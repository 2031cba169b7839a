package replay

import (
	"strings"

	"github.com/corral-dev/corral/internal/term"
)

// TailLines is the screen as a byte-tail detector sees it: the last n bytes
// of output with escape sequences stripped, split into lines (CRLF or LF),
// each line cut to what follows its last carriage return. It is the baseline the
// emulated screen is measured against: it knows nothing of cursor moves,
// erases or the alternate screen.
func TailLines(out []byte, n int) []string {
	if len(out) > n {
		out = out[len(out)-n:]
	}
	text := strings.ReplaceAll(term.StripEscapes(out), "\r\n", "\n")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if j := strings.LastIndexByte(l, '\r'); j >= 0 {
			l = l[j+1:]
		}
		lines[i] = strings.TrimRight(l, " ")
	}
	return lines
}
