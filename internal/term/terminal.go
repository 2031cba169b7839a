// Package term is corral's terminal screen, behind its own lock.
//
// A Terminal is written to with the bytes a program prints. It keeps the
// visible screen apart from scrollback, answers the queries programs wait on
// (the replies go to Options.Replies, which the caller copies back into the
// program's input), and taps the protocol sequences corral cares about (OSC
// 7501 status reports, titles, progress, shell marks, bells, notification
// requests) without drawing them. Readers get copies (Snapshot), never
// pointers into the live screen.
//
// The package knows nothing of processes or sockets: it is tested with bytes.
package term

import (
	"fmt"
	"io"
	"strings"
	"sync"
)

// Options configure a Terminal.
type Options struct {
	Cols, Rows int
	// ScrollbackLines bounds the history kept above the visible screen.
	// Zero means DefaultScrollback.
	ScrollbackLines int
	// Replies receives the answers to queries (DA1, cursor position, …).
	// It is called after the terminal's lock is released, in order.
	Replies io.Writer
	// OnEvent receives tapped protocol events, after the lock is released,
	// in the order they appeared in the byte stream.
	OnEvent func(Event)
}

// DefaultScrollback is the number of history lines kept when Options leave
// it zero. History is kept as text packed in one buffer: a line costs its
// characters and a 4-byte offset (a quarter more while dropped lines
// wait to be compacted away), so 500 lines of 120 columns are at most
// about 75 KB of ASCII.
const DefaultScrollback = 500

// Terminal is a thread-safe terminal emulator.
type Terminal struct {
	opts Options

	// mu guards the fields that follow.
	mu    sync.Mutex
	emu   *emulator
	title string
	// replies and events collect what one Write produced; they are handed
	// to the caller after mu is released. late holds replies produced
	// outside a write (an in-band resize report), sent after the next
	// write's own.
	replies []byte
	events  []Event
	late    []byte
	// statusQueryPending is set when an OSC 7501 feature query was parsed
	// but its terminator (BEL or ST) is not known yet.
	statusQueryPending bool
	closed             bool
	// frozen is the last screen of a terminal whose program ended; the
	// screen (cells, scrollback) is released and these copies answer.
	frozen    *frozenScreen
	panics    int
	lastPanic string
	// rows caches the text of each visible row between snapshots; only rows
	// the screen marked touched are rebuilt. rowsValid is cleared when the
	// touch marks cannot be trusted (screen switch, reset, resize, a new
	// screen).
	rows      []string
	rowsValid bool
	// utf8Tail holds an incomplete UTF-8 character from the last write.
	utf8Tail []byte
}

// New returns a Terminal of the given size.
func New(opts Options) *Terminal {
	if opts.Cols <= 0 {
		opts.Cols = 80
	}
	if opts.Rows <= 0 {
		opts.Rows = 24
	}
	if opts.ScrollbackLines <= 0 {
		opts.ScrollbackLines = DefaultScrollback
	}
	t := &Terminal{opts: opts}
	t.emu = newEmulator(t, opts.Cols, opts.Rows, opts.ScrollbackLines)
	return t
}

// Write feeds program output. Bytes may be split anywhere, mid-rune or
// mid-escape. It never fails once the terminal is open.
func (t *Terminal) Write(p []byte) (int, error) {
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
	if len(t.late) > 0 {
		t.replies = append(t.replies, t.late...)
		t.late = t.late[:0]
	}
	replies, events := t.replies, t.events
	t.replies, t.events = nil, nil
	t.mu.Unlock()

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

// feedLocked writes to the screen. Its input is untrusted: if the screen
// code panics on it, the pane must live on. The screen's state is unknown
// after a panic, so it is replaced by a fresh one of the same size (lost
// until the program redraws) and the panic is counted.
func (t *Terminal) feedLocked(p []byte) {
	defer func() {
		if r := recover(); r != nil {
			t.panics++
			t.lastPanic = fmt.Sprint(r)
			hook := t.emu.testCsiHook
			t.emu = newEmulator(t, t.opts.Cols, t.opts.Rows, t.opts.ScrollbackLines)
			t.emu.testCsiHook = hook
			t.rowsValid = false
			t.title = ""
			t.statusQueryPending = false
		}
	}()
	t.emu.unpackScreens()
	t.emu.write(p)
}

// Compact packs the screen of a terminal that is idle: its cells become
// bytes (one a plain ASCII cell, short runs for styles, other characters
// and repeats, a row that is its text a reference to it: an agent's
// 120x32 screen in about 300 bytes instead of up to 30 KB of cells),
// and what only writing needs (the style cache, the tables' indexes,
// scratch and parser buffers, the history's spare room) is dropped. The
// next write unpacks it; reads answer the same as before it, Snapshot
// from the rows' text without unpacking, the others from cells unpacked
// for the read alone.
func (t *Terminal) Compact() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.emu == nil || t.emu.packed {
		return
	}
	t.refreshRowsLocked()
	t.emu.pack(t.rows)
	if len(t.late) == 0 {
		t.late = nil
	}
}

// Panics returns how many times the screen panicked on input and was
// replaced, and the last panic's message.
func (t *Terminal) Panics() (int, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.panics, t.lastPanic
}

// Close releases the screen. Later writes fail with io.ErrClosedPipe.
func (t *Terminal) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	return nil
}

type frozenScreen struct {
	snap   Snapshot
	ansi   string
	styled [][]Run
}

// Freeze keeps copies of the visible screen and releases the screen: its
// cells and its scrollback. A pane whose program ended needs only its last
// screen. Later writes fail like after Close; Snapshot, ANSI and
// StyledRows answer from the copies; Scrollback is empty.
func (t *Terminal) Freeze() {
	snap, ansi, styled := t.Snapshot(), t.ANSI(), t.StyledRows()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.closed = true
	t.frozen = &frozenScreen{snap: snap, ansi: ansi, styled: styled}
	t.emu, t.rows = nil, nil
}

// CompactRows packs, one by one, the rows of the shown screen not written
// since the last call: a terminal where a program still draws (a
// spinner, a clock) keeps the rows it does not draw packed. The first
// call packs none: it starts the count. Its history, if no row was
// pushed to it over the last two calls, is compressed as Compact's is.
// Reads answer the same as before it, as after Compact.
func (t *Terminal) CompactRows() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.emu == nil || t.emu.packed {
		return
	}
	t.refreshRowsLocked()
	t.emu.packRows(t.rows)
	t.emu.sb.settle()
}

// PackedRows reports how many rows CompactRows packed are not written to
// since.
func (t *Terminal) PackedRows() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.emu == nil {
		return 0
	}
	return t.emu.main.rowsPacked() + t.emu.alt.rowsPacked()
}

// Compacted reports whether the screen is packed (Compact), not written
// to since.
func (t *Terminal) Compacted() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.emu != nil && t.emu.packed
}

// Resize changes the visible size. The screen is not reflowed: columns are
// cut or added on the right and rows at the bottom.
func (t *Terminal) Resize(cols, rows int) {
	if cols <= 0 || rows <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.opts.Cols, t.opts.Rows = cols, rows
	t.emu.unpack()
	t.emu.resize(cols, rows)
	t.rowsValid = false
}

// Size returns the visible size.
func (t *Terminal) Size() (cols, rows int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.opts.Cols, t.opts.Rows
}

// Snapshot is a copy of the visible screen.
type Snapshot struct {
	Cols, Rows int
	// Lines holds one entry per visible row, trailing blanks removed. A wide
	// character occupies one string position and two columns.
	Lines []string
	Title string
	// CursorX and CursorY are zero-based.
	CursorX, CursorY int
	CursorHidden     bool
	AltScreen        bool
}

// Text returns the visible rows joined with newlines.
func (s Snapshot) Text() string { return strings.Join(s.Lines, "\n") }

// Snapshot copies the visible screen while holding the lock.
func (t *Terminal) Snapshot() Snapshot { return t.SnapshotInto(nil) }

// SnapshotInto is Snapshot with the rows copied into lines' array when it
// has room for them (a caller that reads screens often reuses one).
func (t *Terminal) SnapshotInto(lines []string) Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.frozen; f != nil {
		s := f.snap
		s.Lines = append(lines[:0], f.snap.Lines...)
		return s
	}
	e := t.emu
	if cap(lines) < e.rows {
		lines = make([]string, e.rows)
	}
	s := Snapshot{
		Cols:         e.cols,
		Rows:         e.rows,
		Lines:        lines[:e.rows],
		Title:        t.title,
		CursorHidden: e.scr.cur.hidden,
		AltScreen:    e.scr == &e.alt,
		CursorX:      e.scr.cur.x,
		CursorY:      e.scr.cur.y,
	}
	t.refreshRowsLocked()
	copy(s.Lines, t.rows)
	return s
}

// refreshRowsLocked brings the row cache up to date, rebuilding only the
// rows touched since the last call.
func (t *Terminal) refreshRowsLocked() {
	e := t.emu
	touched := e.scr.touched
	if t.needCellsLocked() {
		defer e.peek()()
	}
	if !t.rowsValid || len(t.rows) != e.rows {
		t.rows = make([]string, e.rows)
		for y := range e.rows {
			t.rows[y] = e.rowText(y)
		}
		t.rowsValid = true
	} else {
		for i, word := range touched {
			for word != 0 {
				bit := word & -word
				y := i*64 + bitIndex(bit)
				if y < e.rows {
					// A row rewritten with the same text keeps its string.
					e.scratch = e.appendRow(e.scratch[:0], e.scr.lines[y])
					if string(e.scratch) != t.rows[y] {
						t.rows[y] = string(e.scratch)
					}
				}
				word &^= bit
			}
		}
	}
	clear(touched)
}

// needCellsLocked reports whether refreshRowsLocked reads a row that is
// packed: any row when the cache is rebuilt whole, else the touched ones
// (a row written is unpacked, so only a screen packed whole has those).
func (t *Terminal) needCellsLocked() bool {
	e := t.emu
	s := e.scr
	if !e.packed && !s.hasPackedRows() {
		return false
	}
	if !t.rowsValid || len(t.rows) != e.rows {
		return true
	}
	for i, word := range s.touched {
		for word != 0 {
			bit := word & -word
			y := i*64 + bitIndex(bit)
			if y < e.rows && (e.packed || s.rowPacked(y)) {
				return true
			}
			word &^= bit
		}
	}
	return false
}

func bitIndex(bit uint64) int {
	n := 0
	for bit > 1 {
		bit >>= 1
		n++
	}
	return n
}

func (t *Terminal) rowTextLocked(y int) string {
	defer t.emu.peek()()
	return t.emu.rowText(y)
}

// ANSI renders the visible screen with its colours and attributes as
// escape sequences, rows separated by CRLF.
func (t *Terminal) ANSI() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.frozen != nil {
		return t.frozen.ansi
	}
	defer t.emu.peek()()
	return strings.ReplaceAll(t.emu.uvLines().Render(), "\n", "\r\n")
}

// Scrollback returns up to n of the most recent history lines, oldest first.
func (t *Terminal) Scrollback(n int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.frozen != nil || t.emu == nil {
		return nil
	}
	sb := &t.emu.sb
	total := sb.len()
	if total == 0 {
		return nil
	}
	if n <= 0 || n > total {
		n = total
	}
	out := make([]string, 0, n)
	text, starts := sb.view()
	for i := total - n; i < total; i++ {
		out = append(out, string(historyLine(text, starts, i)))
	}
	return out
}
