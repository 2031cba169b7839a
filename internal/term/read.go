package term

// Reading the screen back: row text and ultraviolet lines.

import (
	"slices"
	"unicode/utf8"

	uv "github.com/charmbracelet/ultraviolet"
)

// appendCell appends a cell's text: nothing for the continuation of a wide
// character, a space for an empty cell.
func (e *emulator) appendCell(b []byte, c cell) []byte {
	switch {
	case c.r < utf8.RuneSelf && c.r > 0:
		return append(b, byte(c.r))
	case c.r == 0:
		if c.w == 0 {
			return b
		}
		return append(b, ' ')
	case c.r >= clusterBase:
		if i := int(c.r - clusterBase); i < len(e.clusters) {
			return append(b, e.clusters[i]...)
		}
		return append(b, ' ')
	}
	return utf8.AppendRune(b, c.r)
}

// appendRow appends row l's text, trailing spaces removed.
func (e *emulator) appendRow(b []byte, l []cell) []byte {
	start := len(b)
	b = slices.Grow(b, len(l))
	for _, c := range l {
		if c.r > 0 && c.r < utf8.RuneSelf {
			b = append(b, byte(c.r))
			continue
		}
		b = e.appendCell(b, c)
	}
	end := len(b)
	for end > start && b[end-1] == ' ' {
		end--
	}
	return b[:end]
}

func (e *emulator) rowText(y int) string {
	if y < 0 || y >= len(e.scr.lines) {
		return ""
	}
	e.scratch = e.appendRow(e.scratch[:0], e.scr.lines[y])
	return string(e.scratch)
}

func (e *emulator) uvStyle(i uint16) (uv.Style, uv.Link) {
	if int(i) >= len(e.styles) {
		i = 0
	}
	st := e.styles[i]
	var l uv.Link
	if st.link != 0 && int(st.link) < len(e.links) {
		l = uv.Link{URL: e.links[st.link].url, Params: e.links[st.link].params}
	}
	return uv.Style{Fg: st.fg.color(), Bg: st.bg.color(), UnderlineColor: st.ul.color(), Underline: st.under, Attrs: st.attrs}, l
}

// uvLines converts the visible screen to ultraviolet lines, for rendering
// it with escape sequences exactly as the reference did.
func (e *emulator) uvLines() uv.Lines {
	out := make(uv.Lines, len(e.scr.lines))
	var buf []byte
	blank := uv.Cell{Content: " ", Width: 1}
	for y, l := range e.scr.lines {
		line := make(uv.Line, e.cols)
		for x := len(l); x < e.cols; x++ {
			line[x] = blank
		}
		for x, c := range l {
			if c.r == 0 && c.w == 0 {
				continue
			}
			buf = e.appendCell(buf[:0], c)
			st, lk := e.uvStyle(c.st)
			line[x] = uv.Cell{Content: string(buf), Width: int(c.w), Style: st, Link: lk}
		}
		out[y] = line
	}
	return out
}
