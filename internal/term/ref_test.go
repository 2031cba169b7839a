package term

// The reference screen: the charmbracelet/x/vt emulator as corral used it
// before its own screen, kept for differential tests.

import (
	"fmt"
	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
	"image/color"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Terminal is a thread-safe terminal emulator.
type refTerminal struct {
	opts Options

	// mu guards the fields that follow. Lock order: mu before drainMu.
	mu    sync.Mutex
	emu   *vt.Emulator
	title string
	// replies and events collect what one Write produced; they are handed
	// to the caller after mu is released.
	replies []byte
	events  []Event
	// statusQueryPending is set when an OSC 7501 feature query was parsed
	// but its terminator (BEL or ST) is not known yet.
	statusQueryPending bool
	closed             bool
	// frozen is the last screen of a terminal whose program ended; the
	// emulator (cells, scrollback) is released and these copies answer.
	frozen    *refFrozen
	panics    int
	lastPanic string
	// rows caches the text of each visible row between snapshots; only rows
	// the emulator marked touched are rebuilt. rowsValid is cleared when the
	// emulator's touch marks cannot be trusted (screen switch, reset,
	// resize, a new emulator).
	rows      []string
	rowsValid bool
	// utf8Tail holds an incomplete UTF-8 character from the last write.
	utf8Tail []byte

	// drainMu guards drained: bytes the emulator wrote to its own reply
	// pipe for sequences this package does not intercept (in-band resize).
	drainMu sync.Mutex
	drained []byte
	drainWG sync.WaitGroup
}

// New returns a Terminal of the given size. Close it to stop its reply
// drain goroutine.
func newRef(opts Options) *refTerminal {
	if opts.Cols <= 0 {
		opts.Cols = 80
	}
	if opts.Rows <= 0 {
		opts.Rows = 24
	}
	if opts.ScrollbackLines <= 0 {
		opts.ScrollbackLines = DefaultScrollback
	}
	t := &refTerminal{opts: opts}
	t.startEmulatorLocked()
	return t
}

// startEmulatorLocked creates the emulator with corral's handlers and the
// goroutine that drains its reply pipe.
func (t *refTerminal) startEmulatorLocked() {
	emu := vt.NewEmulator(t.opts.Cols, t.opts.Rows)
	emu.SetScrollbackSize(t.opts.ScrollbackLines)
	emu.SetCallbacks(vt.Callbacks{
		Bell:      func() { t.events = append(t.events, Event{Kind: EventBell}) },
		AltScreen: func(bool) { t.rowsValid = false },
	})
	t.emu = emu
	t.rowsValid = false
	t.installHandlers()
	t.drainWG.Add(1)
	go t.drain(emu)
}

// drain reads what the emulator writes to its internal reply pipe. Without
// a reader, the emulator's Write would block on such a reply.
func (t *refTerminal) drain(emu *vt.Emulator) {
	defer t.drainWG.Done()
	buf := make([]byte, 256)
	for {
		n, err := emu.Read(buf)
		if n > 0 {
			t.drainMu.Lock()
			t.drained = append(t.drained, buf[:n]...)
			t.drainMu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// Write feeds program output. Bytes may be split anywhere, mid-rune or
// mid-escape. It never fails once the terminal is open.
func (t *refTerminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return 0, io.ErrClosedPipe
	}
	t.feedLocked(t.sanitizeLocked(p))
	// A query terminated by BEL has been dispatched; one terminated by ESC
	// waits for the backslash, which may come in the next write.
	if t.statusQueryPending && (len(p) == 0 || p[len(p)-1] != 0x1b) {
		t.answerStatusQueryLocked("\a")
	}
	replies, events := t.replies, t.events
	t.replies, t.events = nil, nil
	t.mu.Unlock()

	t.drainMu.Lock()
	if len(t.drained) > 0 {
		replies = append(replies, t.drained...)
		t.drained = t.drained[:0]
	}
	t.drainMu.Unlock()

	if len(replies) > 0 && t.opts.Replies != nil {
		_, _ = t.opts.Replies.Write(replies)
	}
	if t.opts.OnEvent != nil {
		for _, ev := range events {
			t.opts.OnEvent(ev)
		}
	}
	return len(p), nil
}

// feedLocked writes to the emulator. The emulator is third-party code fed
// untrusted bytes: if it panics, the pane must live on. The emulator's
// state is unknown after a panic, so it is replaced by a fresh one of the
// same size (the screen is lost until the program redraws) and the panic
// is counted.
func (t *refTerminal) feedLocked(p []byte) {
	defer func() {
		if r := recover(); r != nil {
			t.panics++
			t.lastPanic = fmt.Sprint(r)
			old := t.emu
			t.startEmulatorLocked()
			t.title = ""
			t.statusQueryPending = false
			refStopEmulator(old)
		}
	}()
	_, _ = t.emu.Write(p)
}

// Panics returns how many times the emulator panicked on input and was
// replaced, and the last panic's message.
func (t *refTerminal) Panics() (int, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.panics, t.lastPanic
}

// Close releases the emulator. Later writes fail with io.ErrClosedPipe.
func (t *refTerminal) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	refStopEmulator(t.emu)
	t.mu.Unlock()
	t.drainWG.Wait()
	return nil
}

type refFrozen struct {
	snap   Snapshot
	ansi   string
	styled [][]Run
}

// Freeze keeps copies of the visible screen and releases the emulator:
// its cells, its scrollback and its goroutine. A pane whose program ended
// needs only its last screen, and an emulator can hold hundreds of
// megabytes. Later writes fail like after Close; Snapshot, ANSI and
// StyledRows answer from the copies; Scrollback is empty.
func (t *refTerminal) Freeze() {
	snap, ansi, styled := t.Snapshot(), t.ANSI(), t.StyledRows()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	t.frozen = &refFrozen{snap: snap, ansi: ansi, styled: styled}
	refStopEmulator(t.emu)
	t.mu.Unlock()
	t.drainWG.Wait()
	t.mu.Lock()
	t.emu, t.rows = nil, nil
	t.mu.Unlock()
	t.drainMu.Lock()
	t.drained = nil
	t.drainMu.Unlock()
}

// stopEmulator ends the emulator's drain goroutine by closing the pipe it
// reads. NOTE: Emulator.Close would do that too, but it writes a field that
// Emulator.Read reads without a lock: a data race with the drain goroutine.
func refStopEmulator(e *vt.Emulator) {
	if pw, ok := e.InputPipe().(*io.PipeWriter); ok {
		_ = pw.Close()
	}
}

// Resize changes the visible size. Rows that no longer fit are kept in
// scrollback by the emulator.
func (t *refTerminal) Resize(cols, rows int) {
	if cols <= 0 || rows <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.opts.Cols, t.opts.Rows = cols, rows
	t.emu.Resize(cols, rows)
	t.rowsValid = false
}

// Size returns the visible size.
func (t *refTerminal) Size() (cols, rows int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.opts.Cols, t.opts.Rows
}

// Snapshot copies the visible screen while holding the lock.
func (t *refTerminal) Snapshot() Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.frozen; f != nil {
		s := f.snap
		s.Lines = append([]string(nil), f.snap.Lines...)
		return s
	}
	cols, rows := t.emu.Width(), t.emu.Height()
	s := Snapshot{
		Cols:         cols,
		Rows:         rows,
		Lines:        make([]string, rows),
		Title:        t.title,
		CursorHidden: t.emu.CursorHidden(),
		AltScreen:    t.emu.IsAltScreen(),
	}
	pos := t.emu.CursorPosition()
	s.CursorX, s.CursorY = pos.X, pos.Y
	t.refreshRowsLocked()
	copy(s.Lines, t.rows)
	return s
}

// refreshRowsLocked brings the row cache up to date, rebuilding only the
// rows touched since the last call.
func (t *refTerminal) refreshRowsLocked() {
	cols, rows := t.emu.Width(), t.emu.Height()
	// NOTE: Touched returns the emulator's own slice of touch marks.
	// Clearing its entries here is how we say "seen"; nothing else in the
	// emulator reads them unless it draws itself, which we never ask for.
	touched := t.emu.Touched()
	if !t.rowsValid || len(t.rows) != rows {
		t.rows = make([]string, rows)
		for y := range rows {
			t.rows[y] = t.rowTextLocked(y, cols)
		}
		t.rowsValid = true
	} else {
		for y, ld := range touched {
			if ld != nil && y < rows {
				t.rows[y] = t.rowTextLocked(y, cols)
			}
		}
	}
	for i := range touched {
		touched[i] = nil
	}
}

func (t *refTerminal) rowTextLocked(y, cols int) string {
	var b strings.Builder
	b.Grow(cols)
	for x := 0; x < cols; x++ {
		refWriteCell(&b, t.emu.CellAt(x, y))
	}
	return strings.TrimRight(b.String(), " ")
}

// ANSI renders the visible screen with its colours and attributes as
// escape sequences, rows separated by CRLF.
func (t *refTerminal) ANSI() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.frozen != nil {
		return t.frozen.ansi
	}
	return strings.ReplaceAll(t.emu.Render(), "\n", "\r\n")
}

// Scrollback returns up to n of the most recent history lines, oldest first.
func (t *refTerminal) Scrollback(n int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.frozen != nil {
		return nil
	}
	sb := t.emu.Scrollback()
	if sb == nil {
		return nil
	}
	total := sb.Len()
	if n <= 0 || n > total {
		n = total
	}
	out := make([]string, 0, n)
	var b strings.Builder
	for i := total - n; i < total; i++ {
		b.Reset()
		for _, c := range sb.Line(i) {
			refWriteCell(&b, &c)
		}
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	return out
}

// writeCell appends a cell's text. The continuation cell of a wide
// character has width 0 and no content, and adds nothing.
func refWriteCell(b *strings.Builder, c *uv.Cell) {
	switch {
	case c == nil:
		b.WriteByte(' ')
	case c.Width == 0 && c.Content == "":
		// continuation of a wide character
	case c.Content == "":
		b.WriteByte(' ')
	default:
		b.WriteString(c.Content)
	}
}

// installHandlers overrides the emulator's query answers (which it would
// write to a pipe and block on) with answers collected under t.mu, and
// registers the protocol taps. Handlers run while t.mu is held.
func (t *refTerminal) installHandlers() {
	e := t.emu

	// DA1: primary device attributes. Any pending OSC 7501 query answer
	// must precede it: that order is how programs detect support.
	e.RegisterCsiHandler('c', func(params ansi.Params) bool {
		if n, _, _ := params.Param(0, 0); n != 0 {
			return false
		}
		t.flushStatusQueryLocked()
		t.reply("\x1b[?62;1;6;22c")
		return true
	})
	// DA2: secondary device attributes.
	e.RegisterCsiHandler(ansi.Command('>', 0, 'c'), func(params ansi.Params) bool {
		if n, _, _ := params.Param(0, 0); n != 0 {
			return false
		}
		t.flushStatusQueryLocked()
		t.reply("\x1b[>1;10;0c")
		return true
	})
	// DSR: operating status and cursor position.
	e.RegisterCsiHandler('n', func(params ansi.Params) bool {
		n, _, _ := params.Param(0, 0)
		switch n {
		case 5:
			t.reply("\x1b[0n")
		case 6:
			p := e.CursorPosition()
			t.reply(fmt.Sprintf("\x1b[%d;%dR", p.Y+1, p.X+1))
		default:
			return false
		}
		return true
	})
	// DECXCPR: extended cursor position.
	e.RegisterCsiHandler(ansi.Command('?', 0, 'n'), func(params ansi.Params) bool {
		if n, _, _ := params.Param(0, 0); n != 6 {
			return false
		}
		p := e.CursorPosition()
		t.reply(fmt.Sprintf("\x1b[?%d;%d;1R", p.Y+1, p.X+1))
		return true
	})
	// DECRQM: request a DEC private mode (CSI ? Pd $ p). We report the modes
	// the emulator tracks; unknown modes are "not recognised" (0).
	e.RegisterCsiHandler(ansi.Command('?', '$', 'p'), func(params ansi.Params) bool {
		n, _, ok := params.Param(0, 0)
		if !ok {
			return false
		}
		t.reply(fmt.Sprintf("\x1b[?%d;%d$y", n, t.decModeSettingLocked(n)))
		return true
	})
	// DECRQM for ANSI modes (CSI Pa $ p).
	e.RegisterCsiHandler(ansi.Command(0, '$', 'p'), func(params ansi.Params) bool {
		n, _, ok := params.Param(0, 0)
		if !ok {
			return false
		}
		t.reply(fmt.Sprintf("\x1b[%d;0$y", n))
		return true
	})
	// XTVERSION: CSI > 0 q → DCS > | name ST.
	e.RegisterCsiHandler(ansi.Command('>', 0, 'q'), func(params ansi.Params) bool {
		if n, _, _ := params.Param(0, 0); n != 0 {
			return false
		}
		t.reply("\x1bP>|" + XTVersion + "\x1b\\")
		return true
	})
	// Kitty keyboard protocol query: CSI ? u → CSI ? flags u. We support no
	// progressive enhancements, and say so.
	e.RegisterCsiHandler(ansi.Command('?', 0, 'u'), func(params ansi.Params) bool {
		t.reply("\x1b[?0u")
		return true
	})
	// OSC 10/11/12 colour queries are answered by the emulator, which
	// writes to its pipe; route them here instead so they keep their order.
	for _, cmd := range []int{10, 11, 12} {
		e.RegisterOscHandler(cmd, func(data []byte) bool {
			body := oscBody(data)
			if body != "?" {
				return false // a colour being set: let the emulator handle it
			}
			t.reply(fmt.Sprintf("\x1b]%d;%s\x1b\\", cmd, defaultColour(cmd)))
			return true
		})
	}
	// DECSTBM: the emulator does not clamp the bottom margin to the screen
	// and indexes past its buffer later (CSI ;7 r on a 5-row screen, then
	// CSI L). xterm clamps; the emulator keeps no public way to set margins,
	// so an out-of-range bottom is clamped by rewriting the parameter the
	// emulator's own handler reads next (it runs after this one).
	e.RegisterCsiHandler('r', func(params ansi.Params) bool {
		if len(params) >= 2 {
			if b, _, ok := params.Param(1, 0); ok && b > e.Height() {
				params[1] = ansi.Param(e.Height())
			}
		}
		return false
	})
	// ST as an escape sequence (ESC \) follows an OSC ended by ESC.
	e.RegisterEscHandler('\\', func() bool {
		if t.statusQueryPending {
			t.answerStatusQueryLocked("\x1b\\")
		}
		return true
	})

	t.installTaps()
	t.installLimits()
}

func (t *refTerminal) reply(s string) { t.replies = append(t.replies, s...) }

// flushStatusQueryLocked answers a pending OSC 7501 query before another
// reply is written. A query still pending here ended in BEL or a bare ESC.
func (t *refTerminal) flushStatusQueryLocked() {
	if t.statusQueryPending {
		t.answerStatusQueryLocked("\a")
	}
}

func (t *refTerminal) answerStatusQueryLocked(terminator string) {
	t.statusQueryPending = false
	t.reply("\x1b]7501;" + StatusQuery + terminator)
}

// decModeSettingLocked reports a DEC private mode for DECRQM: 1 set, 2
// reset, 0 not recognised. Synchronized output (2026) is recognised and
// reset: the emulator draws every frame as it comes.
func (t *refTerminal) decModeSettingLocked(mode int) int {
	switch mode {
	case 2026, 2027, 2031, 2048:
		return 2
	case 1049, 47, 1047:
		if t.emu.IsAltScreen() {
			return 1
		}
		return 2
	case 25:
		if t.emu.CursorHidden() {
			return 2
		}
		return 1
	}
	return 0
}

func (t *refTerminal) emit(ev Event) { t.events = append(t.events, ev) }

func (t *refTerminal) installTaps() {
	e := t.emu
	e.RegisterOscHandler(7501, func(data []byte) bool {
		body := oscBody(data)
		// ESC ] + data + at least a one-byte terminator.
		if 2+len(data)+1 > MaxStatusSequence {
			t.emit(Event{Kind: EventStatus, Oversize: true})
			return true
		}
		if body == StatusQuery {
			t.flushStatusQueryLocked()
			t.statusQueryPending = true
			return true
		}
		t.emit(Event{Kind: EventStatus, Text: body})
		return true
	})
	for _, cmd := range []int{0, 2} {
		e.RegisterOscHandler(cmd, func(data []byte) bool {
			// The emulator's own handler drops titles that contain ';'.
			t.title = clipText(oscBody(data), MaxTitle)
			t.emit(Event{Kind: EventTitle, Text: t.title})
			return true
		})
	}
	e.RegisterOscHandler(1, func([]byte) bool { return true }) // icon name: not kept
	e.RegisterOscHandler(9, func(data []byte) bool {
		body := oscBody(data)
		if rest, ok := strings.CutPrefix(body, "4;"); ok {
			t.emit(parseProgress(rest))
			return true
		}
		t.emit(Event{Kind: EventNotify, NotifySource: "9", Text: clipText(body, MaxNotifyText)})
		return true
	})
	e.RegisterOscHandler(777, func(data []byte) bool {
		parts := strings.SplitN(oscBody(data), ";", 3)
		if len(parts) >= 2 && parts[0] == "notify" {
			ev := Event{Kind: EventNotify, NotifySource: "777", NotifyTitle: clipText(parts[1], MaxTitle)}
			if len(parts) == 3 {
				ev.Text = clipText(parts[2], MaxNotifyText)
			}
			t.emit(ev)
		}
		return true
	})
	e.RegisterOscHandler(99, func(data []byte) bool {
		_, payload, _ := strings.Cut(oscBody(data), ";") // META;PAYLOAD
		t.emit(Event{Kind: EventNotify, NotifySource: "99", Text: clipText(payload, MaxNotifyText)})
		return true
	})
	e.RegisterOscHandler(133, func(data []byte) bool {
		body := oscBody(data)
		if body == "" {
			return true
		}
		ev := Event{Kind: EventPromptMark, Mark: body[0], ExitCode: -1}
		if ev.Mark == 'D' {
			if rest, ok := strings.CutPrefix(body, "D;"); ok {
				code, _, _ := strings.Cut(rest, ";")
				if n, err := strconv.Atoi(code); err == nil {
					ev.ExitCode = n
				}
			}
		}
		t.emit(ev)
		return true
	})
	// RIS: tap it, then let the emulator reset (returning false falls
	// through to its own handler).
	e.RegisterEscHandler('c', func() bool {
		t.title = ""
		t.rowsValid = false
		t.statusQueryPending = false
		t.emit(Event{Kind: EventReset})
		return false
	})
}

// Count parameters are clamped before the emulator sees them. The emulator
// loops once per count: "CSI 999999999 X" (erase characters) took seconds,
// and "CSI 999999999 b" (repeat the last character) never finished — ten
// bytes from a pane would stall its reader. Counts beyond the screen change
// nothing visible, so they are cut to what the screen can show.
func (t *refTerminal) installLimits() {
	e := t.emu
	perLine := func() int { return max(e.Width(), e.Height()) }
	perScreen := func() int { return e.Width() * (e.Height() + 1) }
	clampFirst := func(limit func() int) func(ansi.Params) bool {
		return func(params ansi.Params) bool {
			if len(params) > 0 {
				if n, _, ok := params.Param(0, 0); ok && n > limit() {
					params[0] = ansi.Param(limit())
				}
			}
			return false // on to the emulator's own handler
		}
	}
	// Cursor moves, erases, inserts, deletes, scrolls and tabs: at most a
	// screen's width or height.
	for _, final := range []byte{'@', 'A', 'B', 'C', 'D', 'E', 'F', 'I', 'L', 'M', 'P', 'S', 'T', 'X', 'Z', 'a', 'e', '`', 'G', 'd'} {
		e.RegisterCsiHandler(int(final), clampFirst(perLine))
	}
	// Repeat the last character: past a screenful and a line, every further
	// line of repeats only scrolls a full line of the same character, so
	// whole lines are dropped and the visible screen stays exact.
	e.RegisterCsiHandler('b', func(params ansi.Params) bool {
		if len(params) > 0 {
			if n, _, ok := params.Param(0, 0); ok && n > perScreen() {
				params[0] = ansi.Param(perScreen() + (n-perScreen())%e.Width())
			}
		}
		return false
	})
}

// sanitizeLocked makes the bytes valid UTF-8 before the emulator sees them.
// NOTE: the emulator's parser, in the middle of a multi-byte character,
// takes the next byte as part of it whatever it is: a lead byte left alone
// by garbage output swallowed the ESC after it, and with it the reset a
// program sent to recover ("\xd3" then "ESC c" printed "c" and lost the
// reset). Raw C1 bytes (0x80–0x9F) are not controls in a UTF-8 terminal
// either. So every byte that is not part of a valid character becomes
// U+FFFD; a character split across two writes is held until it completes.
func (t *refTerminal) sanitizeLocked(p []byte) []byte {
	if len(t.utf8Tail) == 0 && utf8.Valid(p) {
		return p
	}
	buf := append(t.utf8Tail, p...)
	t.utf8Tail = nil
	out := make([]byte, 0, len(buf)+8)
	for i := 0; i < len(buf); {
		c := buf[i]
		if c < utf8.RuneSelf {
			out = append(out, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(buf[i:])
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(buf[i:]) {
				// An incomplete character at the end: wait for the rest.
				t.utf8Tail = append([]byte(nil), buf[i:]...)
				break
			}
			out = append(out, "\uFFFD"...)
			i++
			continue
		}
		out = append(out, buf[i:i+size]...)
		i += size
	}
	return out
}

// StyledRows copies the visible screen as styled runs, one slice per row,
// trailing default-styled blanks removed.
func (t *refTerminal) StyledRows() [][]Run {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.frozen; f != nil {
		out := make([][]Run, len(f.styled))
		for i, r := range f.styled {
			out[i] = append([]Run(nil), r...)
		}
		return out
	}
	cols, rows := t.emu.Width(), t.emu.Height()
	out := make([][]Run, rows)
	for y := range rows {
		var runs []Run
		var b strings.Builder
		var cur Run
		flush := func() {
			if b.Len() > 0 {
				cur.Text = b.String()
				runs = append(runs, cur)
				b.Reset()
			}
		}
		for x := 0; x < cols; x++ {
			c := t.emu.CellAt(x, y)
			if c == nil {
				continue
			}
			st := refStyleOf(c.Style)
			if st != cur {
				flush()
				cur = st
			}
			refWriteCell(&b, c)
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

func refStyleOf(s uv.Style) Run {
	return Run{FG: refHex(s.Fg), BG: refHex(s.Bg), Bold: s.Attrs&uv.AttrBold != 0, Faint: s.Attrs&uv.AttrFaint != 0,
		Italic: s.Attrs&uv.AttrItalic != 0, Reverse: s.Attrs&uv.AttrReverse != 0, Underline: s.Underline != 0}
}

func refHex(c color.Color) string {
	if c == nil {
		return ""
	}
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}
