package detect

import (
	"strings"
	"unicode"
)

// promptLine says what a block asks when no signal gave its words: the
// lowest visible line that asks a question, stripped of the box drawing
// and markers around it; failing that, a plain phrase for the kind.
func promptLine(lines []string, kind string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.TrimFunc(lines[i], isFrame)
		if strings.HasSuffix(line, "?") && len([]rune(line)) > 3 {
			if r := []rune(line); len(r) > 200 {
				line = string(r[len(r)-200:])
			}
			return strings.Join(strings.Fields(line), " ")
		}
	}
	switch kind {
	case "permission":
		return "a permission prompt is open"
	case "question":
		return "a question is open"
	case "login":
		return "a login is waiting"
	}
	return "waiting for an answer"
}

// isFrame reports whether r frames a line rather than says something:
// spaces, box drawing, block elements and the markers agents put before
// a prompt or an option.
func isFrame(r rune) bool {
	switch {
	case unicode.IsSpace(r), r >= 0x2500 && r <= 0x259F:
		return true
	}
	return strings.ContainsRune("|>❯›•*·", r)
}
