package term

// Bytes into the emulator: printable runs and whole CSI sequences go
// straight to their handlers, the rest through the ansi parser.

import (
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/ansi/parser"
)

// write feeds bytes (valid UTF-8, see sanitizeLocked). Printable runs and
// plain controls in the ground state skip the parser's per-byte walk.
func (e *emulator) write(p []byte) {
	for i := 0; i < len(p); {
		b := p[i]
		if e.p.State() == parser.GroundState {
			switch {
			case b >= 0x20 && b < 0x7f:
				j := i + 1
				for j < len(p) && p[j] >= 0x20 && p[j] < 0x7f {
					j++
				}
				e.printASCII(p[i:j])
				i = j
				continue
			case b >= 0xc2 && b < 0xf5:
				r, size := utf8.DecodeRune(p[i:])
				if size > 1 {
					e.printRune(r)
					i += size
					continue
				}
			case b == 0x1b:
				if n := e.fastCSI(p[i:]); n > 0 {
					i += n
					continue
				}
			case b < 0x20:
				e.execute(b)
				i++
				continue
			}
		}
		e.advance(b)
		i++
	}
	e.flush()
}

// advance feeds one byte to the parser, keeping its string data within
// dataSize: a byte the parser would add to a string already that long is
// dropped, as a parser with a fixed buffer drops it.
func (e *emulator) advance(b byte) {
	prev := e.p.State()
	if e.strLen >= dataSize && isStringState(prev) {
		if _, act := parser.Table.Transition(prev, b); act == parser.PutAction {
			return
		}
	}
	act := e.p.Advance(b)
	switch {
	case act == parser.StartAction || !isStringState(e.p.State()):
		e.strLen = 0
	case act == parser.PutAction:
		e.strLen++
	}
}

func isStringState(s parser.State) bool {
	switch s {
	case parser.OscStringState, parser.DcsStringState, parser.SosStringState, parser.PmStringState, parser.ApcStringState:
		return true
	}
	return false
}

// fastCSI parses and dispatches a CSI sequence that lies whole in p (which
// starts with ESC), the way the ansi parser would, and returns its length;
// 0 leaves it to the parser (split sequences, controls or ignored bytes
// inside, too many parameters).
func (e *emulator) fastCSI(p []byte) int {
	if len(p) < 3 || p[1] != '[' {
		return 0
	}
	var params [16]ansi.Param
	n := 0
	params[0] = parser.MissingParam
	i := 2
	prefix := 0
	if c := p[i]; c >= '<' && c <= '?' {
		prefix = int(c)
		i++
	}
	for ; i < len(p); i++ {
		c := p[i]
		switch {
		case c >= '0' && c <= '9':
			if params[n] == parser.MissingParam {
				params[n] = 0
			}
			params[n] = params[n]*10 + ansi.Param(c-'0')
			continue
		case c == ';' || c == ':':
			if c == ':' {
				params[n] |= parser.HasMoreFlag
			}
			n++
			if n >= len(params) {
				return 0
			}
			params[n] = parser.MissingParam
			continue
		}
		break
	}
	inter := 0
	if i < len(p) && p[i] >= 0x20 && p[i] <= 0x2f {
		inter = int(p[i])
		i++
	}
	if i >= len(p) || p[i] < 0x40 || p[i] > 0x7e {
		return 0
	}
	if n > 0 || params[0] != parser.MissingParam {
		n++
	}
	cmd := ansi.Cmd(prefix<<parser.PrefixShift | inter<<parser.IntermedShift | int(p[i]))
	e.csi(cmd, params[:n])
	return i + 1
}
