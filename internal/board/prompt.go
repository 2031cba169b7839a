package board

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/corral-dev/corral/internal/term"
)

// Prompt is what a blocked pane's prompt takes: the named answers its
// rule or manifest defines (yes, always, no, cancel), whether it takes
// option numbers, and the options' labels when the agent reported them
// (a question hook's options).
type Prompt struct {
	Answers []string
	Options bool
	Labels  []string
}

// option is an answer button for a numbered choice.
type option struct {
	N     string `json:"n"`
	Label string `json:"label"`
}

// maxOptions bounds the option buttons a card shows.
const maxOptions = 9

// optionLine is a menu entry as agents draw them: "❯ 1. Red", "  2) Blue".
var optionLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*(?:[❯›>▶●○◯☐☒│]\s*)*(\d{1,2})[.)]\s+(\S.*?)\s*$`)
})

// screenOptions reads a menu's numbered choices from the last rows of a
// screen with text: the last list numbered from 1 in order, lines between
// entries (descriptions) allowed.
func screenOptions(rows [][]term.Run) []string {
	lines := make([]string, len(rows))
	end := 0
	for i, row := range rows {
		var b strings.Builder
		for _, r := range row {
			b.WriteString(r.Text)
		}
		if lines[i] = b.String(); strings.TrimSpace(lines[i]) != "" {
			end = i + 1
		}
	}
	var list []string
	for _, line := range lines[max(0, end-24):end] {
		m := optionLine().FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		switch {
		case n == 1:
			list = []string{m[2]}
		case n == len(list)+1 && n <= maxOptions:
			list = append(list, m[2])
		}
	}
	return list
}

// options are the buttons for a prompt's numbered choices: the agent's
// own labels, else the screen's, else bare numbers.
func options(pr Prompt, rows [][]term.Run) []option {
	if !pr.Options {
		return nil
	}
	labels := pr.Labels
	if len(labels) == 0 {
		labels = screenOptions(rows)
	}
	out := []option{}
	for i, l := range labels {
		if i == maxOptions {
			break
		}
		out = append(out, option{N: strconv.Itoa(i + 1), Label: l})
	}
	if len(out) == 0 {
		for _, n := range []string{"1", "2", "3"} {
			out = append(out, option{N: n})
		}
	}
	return out
}
