package term

// The reference screen: the charmbracelet/x/vt emulator as corral used it
// before its own screen, kept for differential tests.

import (
	"fmt"
	"io"
	"strings"
	"sync"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/vt"
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
