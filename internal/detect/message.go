package detect

import (
	"strings"
	"unicode"
)

// promptLineRows is how far up from the bottom a prompt's question is
// looked for.
const promptLineRows = 15

// promptLine says what a block asks when no signal gave its words. When
// the screen shows the prompt (a rule matched without words), it is the
// lowest line near the bottom that asks a question, stripped of the box
// drawing and markers around it. Otherwise — a report came before its
// dialog was drawn, and any question on screen is older — or when no line
// asks, it is a plain phrase for the kind.
func promptLine(lines []string, kind string, onScreen bool) string {
	for i := len(lines) - 1; onScreen && i >= 0 && i >= len(lines)-promptLineRows; i-- {
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
