package term

import (
	"fmt"
	"image/color"
	"strings"

	uv "github.com/charmbracelet/ultraviolet"
)

// Run is a stretch of one row in one style, for drawing a screen with
// its colours somewhere else (the web board). Colours are "#rrggbb" or ""
// for the terminal's default.
type Run struct {
	Text      string `json:"t"`
	FG        string `json:"f,omitempty"`
	BG        string `json:"b,omitempty"`
	Bold      bool   `json:"B,omitempty"`
	Faint     bool   `json:"F,omitempty"`
	Italic    bool   `json:"I,omitempty"`
	Underline bool   `json:"U,omitempty"`
	Reverse   bool   `json:"R,omitempty"`
}

// StyledRows copies the visible screen as styled runs, one slice per row,
// trailing default-styled blanks removed.
func (t *Terminal) StyledRows() [][]Run {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.frozen; f != nil {
		out := make([][]Run, len(f.styled))
		for i, r := range f.styled {
			out[i] = append([]Run(nil), r...)
		}
		return out
	}
	e := t.emu
	defer e.peek()()
	out := make([][]Run, e.rows)
	runOf := make(map[uint16]Run)
	var text []byte
	for y, line := range e.scr.lines {
		var runs []Run
		var cur Run
		flush := func() {
			if len(text) > 0 {
				cur.Text = string(text)
				runs = append(runs, cur)
				text = text[:0]
			}
		}
		add := func(c cell) {
			st, ok := runOf[c.st]
			if !ok {
				uvs, _ := e.uvStyle(c.st)
				st = styleOf(uvs)
				runOf[c.st] = st
			}
			if st != cur {
				flush()
				cur = st
			}
			text = e.appendCell(text, c)
		}
		for _, c := range line {
			add(c)
		}
		if len(line) < e.cols {
			// The columns past the row's end are blanks in the default
			// style: one stands for all, trimmed below like the rest.
			add(emptyCell)
		}
		flush()
		// Drop trailing blanks in the default style.
		for len(runs) > 0 {
			last := &runs[len(runs)-1]
			if last.BG != "" || last.Reverse || last.Underline {
				break
			}
			last.Text = strings.TrimRight(last.Text, " ")
			if last.Text != "" {
				break
			}
			runs = runs[:len(runs)-1]
		}
		out[y] = runs
	}
	return out
}

func styleOf(s uv.Style) Run {
	return Run{FG: hex(s.Fg), BG: hex(s.Bg), Bold: s.Attrs&uv.AttrBold != 0, Faint: s.Attrs&uv.AttrFaint != 0,
		Italic: s.Attrs&uv.AttrItalic != 0, Reverse: s.Attrs&uv.AttrReverse != 0, Underline: s.Underline != 0}
}

func hex(c color.Color) string {
	if c == nil {
		return ""
	}
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}
