package tmuxctl

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
)

// The control-mode protocol, as tmux 3.2 and later write it (control.c,
// control-notify.c, cmd-queue.c):
//
//	%begin TIME NUM FLAGS      a command's reply starts; FLAGS is 1 for a
//	...                        command read from the control client's stdin,
//	%end TIME NUM FLAGS        0 for the attach command given on the command
//	                           line and for hooks the client's commands fire
//	%error TIME NUM FLAGS      the command failed; the lines are its error
//	%output %ID VALUE          a pane's output; bytes < ' ' and '\' as \ooo
//	%extended-output %ID AGE ... : VALUE   the same, with pause-after
//	%NAME ARGS                 a notification, never inside a reply
//
// NOTE: a reply's lines are the command's output as is: a captured row
// may read "%end ...". A reply ends only at the %end or %error whose
// TIME NUM FLAGS repeat its %begin's.

// kind is what a line outside a reply is.
type kind uint8

const (
	kindBad    kind = iota // not a line of the protocol
	kindOutput             // %output or %extended-output
	kindBegin              // %begin
	kindEnd                // %end
	kindError              // %error
	kindNotify             // any other %name
)

// A line is one line of a control client's output, parsed. Its slices
// point into the line read.
type line struct {
	kind kind
	// pane is the pane of an output line: "%3".
	pane []byte
	// value is an output line's value, still escaped, or a notification's
	// arguments.
	value []byte
	// name is a notification's name, without the '%'.
	name []byte
	// guard is what follows %begin, %end or %error: "TIME NUM FLAGS".
	guard []byte
	// control: a reply's FLAGS is 1, the reply of a command the client
	// sent (as opposed to the attach command's or a hook's).
	control bool
}

var (
	pOutput   = []byte("%output ")
	pExtended = []byte("%extended-output ")
	pBegin    = []byte("%begin ")
	pEnd      = []byte("%end ")
	pError    = []byte("%error ")
)

// parseLine parses one line outside a reply, without its newline.
func parseLine(b []byte) line {
	if len(b) < 2 || b[0] != '%' {
		return line{}
	}
	switch {
	case bytes.HasPrefix(b, pOutput):
		pane, rest, ok := cutPane(b[len(pOutput):])
		if !ok {
			return line{}
		}
		return line{kind: kindOutput, pane: pane, value: rest}
	case bytes.HasPrefix(b, pExtended):
		pane, rest, ok := cutPane(b[len(pExtended):])
		if !ok {
			return line{}
		}
		// AGE and arguments for future use, up to a lone ":".
		for {
			var tok []byte
			tok, rest, ok = bytes.Cut(rest, []byte{' '})
			if len(tok) == 1 && tok[0] == ':' {
				if !ok {
					rest = nil // ":" ends the line: an empty value
				}
				return line{kind: kindOutput, pane: pane, value: rest}
			}
			if !ok || len(tok) == 0 {
				return line{}
			}
		}
	case bytes.HasPrefix(b, pBegin):
		return guardLine(kindBegin, b[len(pBegin):])
	case bytes.HasPrefix(b, pEnd):
		return guardLine(kindEnd, b[len(pEnd):])
	case bytes.HasPrefix(b, pError):
		return guardLine(kindError, b[len(pError):])
	}
	name, args, _ := bytes.Cut(b[1:], []byte{' '})
	if len(name) == 0 {
		return line{}
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c == '-' || c >= '0' && c <= '9') {
			return line{}
		}
	}
	return line{kind: kindNotify, name: name, value: args}
}

// cutPane cuts "%N " off b.
func cutPane(b []byte) (pane, rest []byte, ok bool) {
	pane, rest, found := bytes.Cut(b, []byte{' '})
	if !found {
		// tmux writes no empty output, but "%output %3" is still a pane.
		pane, rest = b, nil
	}
	if !validID(pane, '%') {
		return nil, nil, false
	}
	return pane, rest, true
}

// validID: b is c followed by decimal digits, as tmux's ids are.
func validID(b []byte, c byte) bool {
	if len(b) < 2 || b[0] != c || len(b) > 12 {
		return false
	}
	for _, d := range b[1:] {
		if d < '0' || d > '9' {
			return false
		}
	}
	return true
}

// guardLine parses "TIME NUM FLAGS".
func guardLine(k kind, g []byte) line {
	f := bytes.Fields(g)
	if len(f) != 3 || len(g) > 64 {
		return line{}
	}
	for _, n := range f {
		if _, err := strconv.ParseUint(string(n), 10, 64); err != nil {
			return line{}
		}
	}
	return line{kind: k, guard: g, control: string(f[2]) == "1"}
}

// closes reports whether b ends the reply whose %begin had guard g, and
// whether it ended in an error.
func closes(b, g []byte) (end, failed bool) {
	switch {
	case bytes.HasPrefix(b, pEnd) && bytes.Equal(b[len(pEnd):], g):
		return true, false
	case bytes.HasPrefix(b, pError) && bytes.Equal(b[len(pError):], g):
		return true, true
	}
	return false, false
}

// unescape appends to dst the bytes an output value stands for: tmux
// writes bytes below ' ' and the backslash as \ooo, all else as is. A
// backslash not followed by three octal digits (at most \377) is kept as
// it is and counted in bad.
func unescape(dst, src []byte) (out []byte, bad int) {
	for {
		i := bytes.IndexByte(src, '\\')
		if i < 0 {
			return append(dst, src...), bad
		}
		dst = append(dst, src[:i]...)
		src = src[i:]
		if len(src) >= 4 && src[1] >= '0' && src[1] <= '3' && isOctal(src[2]) && isOctal(src[3]) {
			dst = append(dst, (src[1]-'0')<<6|(src[2]-'0')<<3|(src[3]-'0'))
			src = src[4:]
			continue
		}
		bad++
		dst = append(dst, '\\')
		src = src[1:]
	}
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// escape is what tmux does to output (control_append_data); for tests.
func escape(dst, src []byte) []byte {
	for _, c := range src {
		if c < ' ' || c == '\\' {
			dst = append(dst, '\\', '0'+c>>6, '0'+(c>>3)&7, '0'+c&7)
		} else {
			dst = append(dst, c)
		}
	}
	return dst
}

// maxLine bounds one line: a longer one is skipped and counted.
const maxLine = 16 << 20

// errLong: a line longer than maxLine was skipped.
var errLong = errors.New("line longer than 16 MiB skipped")

// lineReader reads lines of any length up to a bound, without a copy for
// those that fit its buffer.
type lineReader struct {
	r    *bufio.Reader
	long []byte // a line longer than the buffer, gathered
	max  int
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: maxLine}
}

// next returns the next line without its "\n", valid until the next call.
// A line longer than the bound is skipped whole and errLong returned; the
// next call reads on after it. At the end, a last line with no newline is
// returned before io.EOF.
func (lr *lineReader) next() ([]byte, error) {
	if cap(lr.long) > 1<<20 {
		lr.long = nil // not kept for the lines after a long one
	}
	lr.long = lr.long[:0]
	skipping := false
	for {
		b, err := lr.r.ReadSlice('\n')
		switch {
		case err == nil:
			if skipping {
				return nil, errLong
			}
			if len(lr.long) == 0 {
				return b[:len(b)-1], nil
			}
			lr.long = append(lr.long, b[:len(b)-1]...)
			return lr.long, nil
		case errors.Is(err, bufio.ErrBufferFull):
			if skipping {
				continue
			}
			if len(lr.long)+len(b) > lr.max {
				skipping = true
				lr.long = lr.long[:0]
				continue
			}
			lr.long = append(lr.long, b...)
		default:
			if skipping {
				return nil, errLong
			}
			if len(lr.long)+len(b) > 0 {
				lr.long = append(lr.long, b...)
				return lr.long, nil
			}
			return nil, err
		}
	}
}
