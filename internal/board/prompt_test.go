package board

import (
	"fmt"
	"testing"

	"github.com/corral-dev/corral/internal/term"
)

func rowsOf(lines ...string) [][]term.Run {
	out := make([][]term.Run, len(lines))
	for i, l := range lines {
		if l != "" {
			out[i] = []term.Run{{Text: l}}
		}
	}
	return out
}

func TestPromptOptions(t *testing.T) {
	menu := rowsOf(" ☐ Colour", "", "Which colour?", "", "❯ 1. Red", "     A warm colour", "  2. Blue", "  3) Green", "", "Enter to select", "", "", "")
	for _, c := range []struct {
		name string
		pr   Prompt
		rows [][]term.Run
		want string
	}{
		{"the agent's labels first", Prompt{Options: true, Labels: []string{"Yes", "No"}}, menu, "[{1 Yes} {2 No}]"},
		{"the screen's menu", Prompt{Options: true}, menu, "[{1 Red} {2 Blue} {3 Green}]"},
		{"the last menu on screen", Prompt{Options: true}, rowsOf("1. old", "2. older", "text", "1. new", "2. newer"), "[{1 new} {2 newer}]"},
		{"out of order is not a menu", Prompt{Options: true}, rowsOf("2. two", "3. three"), "[{1 } {2 } {3 }]"},
		{"no option template", Prompt{Answers: []string{"yes"}}, menu, "[]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := fmt.Sprint(options(c.pr, c.rows)); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}
