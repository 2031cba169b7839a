package term

import (
	"image/color"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
)

// colour is a packed SGR colour: its kind in the high bits, its value in
// the low 32. The kind keeps how the program named the colour (basic,
// 256-colour index, direct), which is how it is rendered again.
type colour uint64

const (
	colNone colour = iota << 32
	colBasic
	colIndexed
	colRGBA
	colCMYK
)

func toColour(c color.Color) colour {
	switch c := c.(type) {
	case nil:
		return colNone
	case ansi.BasicColor:
		return colBasic | colour(c)
	case ansi.IndexedColor:
		return colIndexed | colour(c)
	case color.RGBA:
		return colRGBA | colour(c.R)<<24 | colour(c.G)<<16 | colour(c.B)<<8 | colour(c.A)
	case color.CMYK:
		return colCMYK | colour(c.C)<<24 | colour(c.M)<<16 | colour(c.Y)<<8 | colour(c.K)
	default:
		r, g, b, a := c.RGBA()
		return colRGBA | colour(r>>8)<<24 | colour(g>>8)<<16 | colour(b>>8)<<8 | colour(a>>8)
	}
}

func (c colour) color() color.Color {
	v := uint32(c)
	switch c &^ 0xffffffff {
	case colBasic:
		return ansi.BasicColor(v)
	case colIndexed:
		return ansi.IndexedColor(v)
	case colRGBA:
		return color.RGBA{R: uint8(v >> 24), G: uint8(v >> 16), B: uint8(v >> 8), A: uint8(v)}
	case colCMYK:
		return color.CMYK{C: uint8(v >> 24), M: uint8(v >> 16), Y: uint8(v >> 8), K: uint8(v)}
	}
	return nil
}

// style is a cell's pen: colours, attributes and hyperlink. It is
// comparable, so the style table can intern it.
type style struct {
	fg, bg, ul colour
	attrs      uint8
	under      uint8
	link       uint16 // index into the link table; 0 is none
}

type link struct{ url, params string }

// Table bounds. A program printing a new true colour (or cluster, or
// link) per cell fills a table; it is then rebuilt from what the cells
// still use, so it stays within a small multiple of the screen.
const (
	maxStyles   = 1 << 16
	maxClusters = 1 << 16
	maxLinks    = 256
	maxLinkLen  = 4096 // URL and parameters; a longer link is not kept
)

// tableLimit is when the style and cluster tables are rebuilt: twice the
// cells of both screens, so a rebuild at least halves them.
func (e *emulator) tableLimit() int {
	return min(maxStyles, 2*2*e.cols*e.rows+256)
}

// sgr applies SGR parameters to a pen, as the reference emulator's
// ultraviolet.ReadStyle does.
func sgr(params ansi.Params, pen *style) {
	if len(params) == 0 {
		*pen = style{link: pen.link}
		return
	}
	for i := 0; i < len(params); i++ {
		param, hasMore, _ := params.Param(i, 0)
		switch param {
		case 0:
			*pen = style{link: pen.link}
		case 1:
			pen.attrs |= uv.AttrBold
		case 2:
			pen.attrs |= uv.AttrFaint
		case 3:
			pen.attrs |= uv.AttrItalic
		case 4:
			next, _, ok := params.Param(i+1, 0)
			if hasMore && ok {
				if next >= 0 && next <= 5 {
					i++
					pen.under = uint8(next)
				}
			} else {
				pen.under = uv.UnderlineSingle
			}
		case 5:
			pen.attrs |= uv.AttrBlink
		case 6:
			pen.attrs |= uv.AttrRapidBlink
		case 7:
			pen.attrs |= uv.AttrReverse
		case 8:
			pen.attrs |= uv.AttrConceal
		case 9:
			pen.attrs |= uv.AttrStrikethrough
		case 22:
			pen.attrs &^= uv.AttrBold | uv.AttrFaint
		case 23:
			pen.attrs &^= uv.AttrItalic
		case 24:
			pen.under = 0
		case 25:
			pen.attrs &^= uv.AttrBlink | uv.AttrRapidBlink
		case 27:
			pen.attrs &^= uv.AttrReverse
		case 28:
			pen.attrs &^= uv.AttrConceal
		case 29:
			pen.attrs &^= uv.AttrStrikethrough
		case 30, 31, 32, 33, 34, 35, 36, 37:
			pen.fg = colBasic | colour(param-30)
		case 38, 48, 58:
			c, n := readColour(params[i:])
			if n > 0 {
				switch param {
				case 38:
					pen.fg = c
				case 48:
					pen.bg = c
				default:
					pen.ul = c
				}
				i += n - 1
			}
		case 39:
			pen.fg = colNone
		case 40, 41, 42, 43, 44, 45, 46, 47:
			pen.bg = colBasic | colour(param-40)
		case 49:
			pen.bg = colNone
		case 59:
			pen.ul = colNone
		case 90, 91, 92, 93, 94, 95, 96, 97:
			pen.fg = colBasic | colour(param-90+8)
		case 100, 101, 102, 103, 104, 105, 106, 107:
			pen.bg = colBasic | colour(param-100+8)
		}
	}
}

// readColour reads an extended colour (38/48/58 and what follows). The two
// forms programs send (";5;N" and ";2;R;G;B") are read here without
// boxing a color.Color; every other form goes through the ansi package.
func readColour(p ansi.Params) (colour, int) {
	if len(p) >= 3 && !p[0].HasMore() && !p[1].HasMore() && !p[2].HasMore() {
		switch p[1].Param(0) {
		case 5:
			return colIndexed | colour(uint8(p[2].Param(0))), 3
		case 2:
			if len(p) >= 5 && !p[3].HasMore() && !p[4].HasMore() {
				r, g, b := p[2].Param(0), p[3].Param(0), p[4].Param(0)
				if r != -1 && g != -1 && b != -1 {
					return colRGBA | colour(uint8(r))<<24 | colour(uint8(g))<<16 | colour(uint8(b))<<8 | 0xff, 5
				}
			}
		}
	}
	var c color.Color
	n := ansi.ReadStyleColor(p, &c)
	if n == 0 {
		return colNone, 0
	}
	return toColour(c), n // "38;0" consumes two parameters and resets the colour
}
