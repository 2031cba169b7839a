package term

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// feed writes each chunk and returns the replies and events it produced.
func feed(t *testing.T, term *Terminal, replies *bytes.Buffer, chunks ...string) {
	t.Helper()
	for _, c := range chunks {
		if _, err := term.Write([]byte(c)); err != nil {
			t.Fatalf("write %q: %v", c, err)
		}
	}
}

func newTest(t *testing.T, cols, rows int) (*Terminal, *bytes.Buffer, *[]Event) {
	t.Helper()
	var replies bytes.Buffer
	var events []Event
	term := New(Options{Cols: cols, Rows: rows, Replies: &replies, OnEvent: func(e Event) { events = append(events, e) }})
	t.Cleanup(func() { term.Close() })
	return term, &replies, &events
}

func TestScreen(t *testing.T) {
	tests := []struct {
		name   string
		input  string
		lines  []string // expected visible rows (only the first len(lines) are checked)
		cursor [2]int   // x, y
	}{
		{"plain text", "hello", []string{"hello"}, [2]int{5, 0}},
		{"newline needs CR", "ab\r\ncd", []string{"ab", "cd"}, [2]int{2, 1}},
		// Claude Code places words with CSI n G (cursor horizontal absolute).
		{"words by CHA", "Do\x1b[4Gyou\x1b[8Gwant", []string{"Do you want"}, [2]int{11, 0}},
		// Rows begun with CR + CSI 1 B (cursor down), no newlines.
		{"rows by CR and CUD", "one\r\x1b[1Btwo\r\x1b[1Bthree", []string{"one", "two", "three"}, [2]int{5, 2}},
		{"erase below", "a\r\nb\r\nc\x1b[2A\r\x1b[J", []string{"", "", ""}, [2]int{0, 0}},
		{"erase line", "abcdef\x1b[3G\x1b[K", []string{"ab"}, [2]int{2, 0}},
		{"SGR is not text", "\x1b[1;38;5;174mred\x1b[0m!", []string{"red!"}, [2]int{4, 0}},
		{"wide characters", "한글x", []string{"한글x"}, [2]int{5, 0}},
		{"emoji", "👍ok", []string{"👍ok"}, [2]int{4, 0}},
		{"cursor position", "\x1b[2;3Hx", []string{"", "  x"}, [2]int{3, 1}},
		{"OSC not drawn", "a\x1b]0;title\x07b\x1b]7501;state=working\x1b\\c", []string{"abc"}, [2]int{3, 0}},
		{"UTF-8 title not drawn", "\x1b]0;✳ Claude Code\x07x", []string{"x"}, [2]int{1, 0}},
		{"scroll region", "\x1b[1;2r\x1b[1;1H1\r\n2\r\n3\x1b[r", []string{"2", "3"}, [2]int{0, 0}}, // DECSTBM homes the cursor
		{"insert line", "a\r\nb\x1b[1;1H\x1b[L", []string{"", "a", "b"}, [2]int{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			term, _, _ := newTest(t, 20, 4)
			feed(t, term, nil, tt.input)
			s := term.Snapshot()
			for i, want := range tt.lines {
				if s.Lines[i] != want {
					t.Errorf("row %d = %q, want %q (screen %q)", i, s.Lines[i], want, s.Lines)
				}
			}
			if got := [2]int{s.CursorX, s.CursorY}; got != tt.cursor {
				t.Errorf("cursor = %v, want %v", got, tt.cursor)
			}
		})
	}
}

// Every split of the input, including mid-rune and mid-escape, must give
// the same screen as the whole input at once.
func TestSplitAnywhere(t *testing.T) {
	input := "\x1b]0;✳ Claude Code\x07\x1b[?25l\x1b[2J\x1b[H\x1b[38;5;174m ▐▛███▜▌\x1b[12G\x1b[39mClaude 한글\r\x1b[1B Do\x1b[5Gyou\x1b[9Gwant\x1b]7501;state=idle\x1b\\\r\n❯ 1. Yes"
	whole, _, _ := newTest(t, 30, 5)
	feed(t, whole, nil, input)
	want := whole.Snapshot()
	for i := 1; i < len(input); i++ {
		term, _, events := newTest(t, 30, 5)
		feed(t, term, nil, input[:i], input[i:])
		got := term.Snapshot()
		if strings.Join(got.Lines, "\n") != strings.Join(want.Lines, "\n") || got.Title != want.Title {
			t.Fatalf("split at %d: screen %q title %q, want %q %q", i, got.Lines, got.Title, want.Lines, want.Title)
		}
		if len(*events) != 2 {
			t.Fatalf("split at %d: events %+v", i, *events)
		}
	}
	// One byte per write.
	term, _, _ := newTest(t, 30, 5)
	for i := 0; i < len(input); i++ {
		feed(t, term, nil, input[i:i+1])
	}
	if got := term.Snapshot(); got.Text() != want.Text() {
		t.Fatalf("byte by byte: %q, want %q", got.Lines, want.Lines)
	}
}

func TestQueries(t *testing.T) {
	tests := []struct {
		name, input, reply string
	}{
		{"DA1", "\x1b[c", "\x1b[?62;1;6;22c"},
		{"DA1 with zero", "\x1b[0c", "\x1b[?62;1;6;22c"},
		{"DA2", "\x1b[>c", "\x1b[>1;10;0c"},
		{"cursor position", "ab\r\ncd\x1b[6n", "\x1b[2;3R"},
		{"operating status", "\x1b[5n", "\x1b[0n"},
		{"DECRQM synchronized output", "\x1b[?2026$p", "\x1b[?2026;2$y"},
		{"DECRQM unknown", "\x1b[?9999$p", "\x1b[?9999;0$y"},
		{"XTVERSION", "\x1b[>0q", "\x1bP>|corral\x1b\\"},
		{"kitty keyboard", "\x1b[?u", "\x1b[?0u"},
		{"foreground colour", "\x1b]10;?\x1b\\", "\x1b]10;rgb:ffff/ffff/ffff\x1b\\"},
		{"background colour", "\x1b]11;?\a", "\x1b]11;rgb:0000/0000/0000\x1b\\"},
		// The OSC 7501 query is answered with its own terminator, before DA1.
		{"status query ST then DA1", "\x1b]7501;?\x1b\\\x1b[c", "\x1b]7501;?\x1b\\\x1b[?62;1;6;22c"},
		{"status query BEL then DA1", "\x1b]7501;?\a\x1b[c", "\x1b]7501;?\a\x1b[?62;1;6;22c"},
		{"status query alone", "\x1b]7501;?\a", "\x1b]7501;?\a"},
		{"a report gets no reply", "\x1b]7501;state=idle\a", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			term, replies, _ := newTest(t, 20, 4)
			feed(t, term, nil, tt.input)
			if got := replies.String(); got != tt.reply {
				t.Errorf("reply = %q, want %q", got, tt.reply)
			}
		})
	}
}

// The query's ST may arrive in the next read.
func TestStatusQuerySplitTerminator(t *testing.T) {
	term, replies, _ := newTest(t, 20, 4)
	feed(t, term, nil, "\x1b]7501;?\x1b", "\\\x1b[c")
	if want := "\x1b]7501;?\x1b\\\x1b[?62;1;6;22c"; replies.String() != want {
		t.Fatalf("reply = %q, want %q", replies.String(), want)
	}
}

func TestTaps(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []Event
	}{
		{"status ST", "\x1b]7501;state=working:progress=40\x1b\\", []Event{{Kind: EventStatus, Text: "state=working:progress=40"}}},
		{"status BEL", "\x1b]7501;state=idle\a", []Event{{Kind: EventStatus, Text: "state=idle"}}},
		{"oversize status", "\x1b]7501;state=idle:msg=" + strings.Repeat("A", 5000) + "\a", []Event{{Kind: EventStatus, Oversize: true}}},
		{"title OSC 0", "\x1b]0;✳ Claude Code\a", []Event{{Kind: EventTitle, Text: "✳ Claude Code"}}},
		{"title OSC 2 with ;", "\x1b]2;a;b\x1b\\", []Event{{Kind: EventTitle, Text: "a;b"}}},
		{"progress set", "\x1b]9;4;1;42\a", []Event{{Kind: EventProgress, ProgressState: ProgressSet, Progress: 42}}},
		{"progress indeterminate", "\x1b]9;4;3\a", []Event{{Kind: EventProgress, ProgressState: ProgressIndeterminate, Progress: -1}}},
		{"progress remove", "\x1b]9;4;0;0\a", []Event{{Kind: EventProgress, ProgressState: ProgressRemove, Progress: 0}}},
		{"iTerm2 notification", "\x1b]9;build done\a", []Event{{Kind: EventNotify, NotifySource: "9", Text: "build done"}}},
		{"urxvt notification", "\x1b]777;notify;Title;Body text\a", []Event{{Kind: EventNotify, NotifySource: "777", NotifyTitle: "Title", Text: "Body text"}}},
		{"kitty notification", "\x1b]99;i=1:d=0;Hello\x1b\\", []Event{{Kind: EventNotify, NotifySource: "99", Text: "Hello"}}},
		{"prompt start", "\x1b]133;A\a", []Event{{Kind: EventPromptMark, Mark: 'A', ExitCode: -1}}},
		{"command done", "\x1b]133;D;2\a", []Event{{Kind: EventPromptMark, Mark: 'D', ExitCode: 2}}},
		{"bell", "ding\a", []Event{{Kind: EventBell}}},
		{"reset", "x\x1bc", []Event{{Kind: EventReset}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			term, _, events := newTest(t, 20, 4)
			feed(t, term, nil, tt.input)
			if len(*events) != len(tt.want) {
				t.Fatalf("events = %+v, want %+v", *events, tt.want)
			}
			for i := range tt.want {
				if (*events)[i] != tt.want[i] {
					t.Errorf("event %d = %+v, want %+v", i, (*events)[i], tt.want[i])
				}
			}
			if s := term.Snapshot(); strings.Contains(s.Text(), "7501") || strings.Contains(s.Text(), "notify") {
				t.Errorf("sequence drawn on screen: %q", s.Lines)
			}
		})
	}
}

func TestTitleSnapshot(t *testing.T) {
	term, _, _ := newTest(t, 20, 4)
	feed(t, term, nil, "\x1b]0;✳ Claude Code\a")
	if got := term.Snapshot().Title; got != "✳ Claude Code" {
		t.Fatalf("title = %q", got)
	}
	feed(t, term, nil, "\x1bc")
	if got := term.Snapshot().Title; got != "" {
		t.Fatalf("title after RIS = %q", got)
	}
}

// A pane may set a title of megabytes; corral keeps (and matches agents'
// patterns against) a bounded one, cut at a character boundary.
func TestHugeStringsAreCapped(t *testing.T) {
	term, _, events := newTest(t, 20, 4)
	huge := strings.Repeat("é", 32<<10) // 64 KB
	feed(t, term, nil, "\x1b]2;"+huge+"\a", "\x1b]9;"+huge+"\a", "\x1b]777;notify;"+huge+";"+huge+"\a", "\x1b]99;;"+huge+"\a")
	title := term.Snapshot().Title
	if len(title) > MaxTitle || len(title) < MaxTitle-4 || !utf8.ValidString(title) {
		t.Fatalf("title kept %d bytes (valid UTF-8: %v)", len(title), utf8.ValidString(title))
	}
	for _, ev := range *events {
		if len(ev.Text) > MaxNotifyText || len(ev.NotifyTitle) > MaxTitle || !utf8.ValidString(ev.Text) {
			t.Fatalf("%v event kept %d + %d bytes", ev.Kind, len(ev.Text), len(ev.NotifyTitle))
		}
	}
}

// The parser's string buffer grows with the strings a pane sends, up to
// dataSize, not past it: megabytes of OSC, DCS, APC, PM and SOS strings
// leave the heap where a few kilobytes would.
func TestStringBufferBounded(t *testing.T) {
	term, _, _ := newTest(t, 20, 4)
	huge := strings.Repeat("x", 1<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, intro := range []string{"\x1b]2;", "\x1bP1$q", "\x1b_", "\x1b^", "\x1bX"} {
		term.Write([]byte(intro))
		for i := 0; i < 4; i++ {
			term.Write([]byte(huge))
		}
		term.Write([]byte("\x1b\\"))
	}
	feed(t, term, nil, "\x1b]2;short\a")
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 64<<10 {
		t.Fatalf("20 MB of strings grew the heap by %d KB", grown>>10)
	}
	if got := term.Snapshot().Title; got != "short" {
		t.Fatalf("title after the huge strings = %q", got)
	}
	runtime.KeepAlive(huge)
}

func TestAltScreenAndScrollback(t *testing.T) {
	term, _, _ := newTest(t, 10, 3)
	feed(t, term, nil, "l1\r\nl2\r\nl3\r\nl4\r\nl5")
	s := term.Snapshot()
	if s.Text() != "l3\nl4\nl5" {
		t.Fatalf("visible = %q", s.Lines)
	}
	if sb := term.Scrollback(0); strings.Join(sb, ",") != "l1,l2" {
		t.Fatalf("scrollback = %q", sb)
	}
	feed(t, term, nil, "\x1b[?1049h\x1b[2J\x1b[Hfull")
	s = term.Snapshot()
	if !s.AltScreen || s.Lines[0] != "full" {
		t.Fatalf("alt screen: %+v", s)
	}
	feed(t, term, nil, "\x1b[?1049l")
	s = term.Snapshot()
	if s.AltScreen || s.Text() != "l3\nl4\nl5" {
		t.Fatalf("after alt screen: %+v", s)
	}
}

func TestResize(t *testing.T) {
	term, replies, _ := newTest(t, 10, 3)
	feed(t, term, nil, "abc")
	term.Resize(40, 10)
	s := term.Snapshot()
	if s.Cols != 40 || s.Rows != 10 || len(s.Lines) != 10 || s.Lines[0] != "abc" {
		t.Fatalf("after resize: %+v", s)
	}
	feed(t, term, nil, "\x1b[99;99H\x1b[6n")
	if replies.String() != "\x1b[10;40R" {
		t.Fatalf("cursor report after resize = %q", replies.String())
	}
	term.Resize(0, 5) // ignored
	if c, r := term.Size(); c != 40 || r != 10 {
		t.Fatalf("size = %dx%d", c, r)
	}
}

// A program turning on in-band resize notifications makes the emulator
// write to its internal pipe; that must not block the writer.
func TestInBandResizeDoesNotBlock(t *testing.T) {
	term, _, _ := newTest(t, 10, 3)
	feed(t, term, nil, "\x1b[?2048h")
	term.Resize(20, 5)
	feed(t, term, nil, "x")
}

func TestClosed(t *testing.T) {
	term := New(Options{Cols: 10, Rows: 3})
	term.Close()
	if _, err := term.Write([]byte("x")); err == nil {
		t.Fatal("write after close succeeded")
	}
	term.Close()
}

// Found by FuzzFeed: a bottom margin past the screen made the emulator
// index past its buffer on the next insert-line.
func TestScrollRegionPastScreenIsClamped(t *testing.T) {
	term, _, _ := newTest(t, 20, 5)
	feed(t, term, nil, "\x1b[?1047h\x1b[;7r\x1b[9L\x1b[9M\x1b[99@x")
	if n, msg := term.Panics(); n != 0 {
		t.Fatalf("emulator panicked: %s", msg)
	}
	feed(t, term, nil, "\x1b[1;3r\x1b[3;1Ha\nb\nc")
	// Line feeds at the region's bottom scroll rows 1-3 only.
	if s := term.Snapshot(); strings.Join(s.Lines, "|") != "a| b|  c||" {
		t.Fatalf("region 1-3 after clamping: %q", s.Lines)
	}
}

// A panic inside the emulator costs the screen, not the pane.
func TestEmulatorPanicIsSurvived(t *testing.T) {
	term, replies, _ := newTest(t, 20, 5)
	term.emu.testCsiHook = func(final byte) {
		if final == 'z' {
			panic("boom")
		}
	}
	feed(t, term, nil, "before\x1b[zlost")
	if n, msg := term.Panics(); n != 1 || msg != "boom" {
		t.Fatalf("panics = %d %q", n, msg)
	}
	feed(t, term, nil, "after\x1b[6n")
	if s := term.Snapshot(); s.Lines[0] != "after" {
		t.Fatalf("screen after recovery: %q", s.Lines)
	}
	if replies.String() != "\x1b[1;6R" {
		t.Fatalf("queries after recovery: %q", replies.String())
	}
}

// Found by FuzzSnapshotCache: a huge count made the emulator loop for
// seconds (ECH) or forever (REP). Each must finish; a watchdog fails the
// test instead of hanging CI.
func TestHugeCountsDoNotStall(t *testing.T) {
	seqs := []string{
		"\x1b[999999999@", "\x1b[999999999L", "\x1b[999999999M", "\x1b[999999999P", "\x1b[999999999X",
		"\x1b[999999999S", "\x1b[999999999T", "a\x1b[999999999b", "\x1b[999999999I", "\x1b[999999999Z",
		"\x1b[999999999A\x1b[999999999C", "\x1b[999999999E", "\x1b[999999999;999999999H\x1b[999999999J",
	}
	for _, seq := range seqs {
		term, _, _ := newTest(t, 12, 5)
		done := make(chan struct{})
		go func() {
			term.Write([]byte(seq))
			term.Snapshot()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%q still running after 10s", seq)
		}
	}
	// The clamp keeps the visible effect: 1+999999999 characters on a
	// 4-wide screen end with a full last row; 1+999999998 with three.
	for seq, want := range map[string]string{"a\x1b[999999999b": "aaaa\naaaa", "a\x1b[999999998b": "aaaa\naaa"} {
		term, _, _ := newTest(t, 4, 2)
		feed(t, term, nil, seq)
		if got := term.Snapshot().Text(); got != want {
			t.Fatalf("%q: %q, want %q", seq, got, want)
		}
	}
}

// Garbage from a pane costs bounded memory: 2 MB of random bytes (about
// 8000 line feeds, far past the scrollback) through a terminal leave the
// heap within bounds.
func TestRandomBytesBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("feeds 2 MB; runs without -short")
	}
	term, _, _ := newTest(t, 120, 32)
	chunk := make([]byte, 32<<10)
	seed := uint64(1)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < 64; i++ {
		for j := range chunk {
			seed = seed*6364136223846793005 + 1442695040888963407
			chunk[j] = byte(seed >> 56)
		}
		term.Write(chunk)
	}
	term.Snapshot()
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	// Scrollback (2000 lines of 120 cells) is the only thing that may grow.
	if grown > 64<<20 {
		t.Fatalf("heap grew by %d MB", grown>>20)
	}
	t.Logf("heap grew by %.1f MB", float64(grown)/(1<<20))
}

func TestStyledRows(t *testing.T) {
	term, _, _ := newTest(t, 20, 2)
	feed(t, term, nil, "a\x1b[1;31mred\x1b[0m \x1b[38;2;1;2;3m<b>\x1b[0m   ")
	rows := term.StyledRows()
	want := []Run{{Text: "a"}, {Text: "red", FG: "#800000", Bold: true}, {Text: " "}, {Text: "<b>", FG: "#010203"}}
	if len(rows) != 2 || len(rows[0]) != len(want) || len(rows[1]) != 0 {
		t.Fatalf("rows %+v", rows)
	}
	for i := range want {
		if rows[0][i] != want[i] {
			t.Errorf("run %d = %+v, want %+v", i, rows[0][i], want[i])
		}
	}
}

// Found by the flood test: a stray UTF-8 lead byte swallowed the ESC of a
// reset. Invalid bytes become U+FFFD; characters split across writes stay
// whole.
func TestInvalidUTF8(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   string
	}{
		{"lead byte then reset", []string{"garbage\xd3", "\x1bcok"}, "ok"},
		{"lead byte then reset in one write", []string{"garbage\xd3\x1bcok"}, "ok"},
		{"raw C1 is not a control", []string{"a\x9b31mb"}, "a\uFFFD31mb"},
		{"split character", []string{"\xe2\x9c", "\xb3 x"}, "✳ x"},
		{"split four bytes", []string{"\xf0", "\x9f\x91", "\x8d"}, "👍"},
		{"truncated then ASCII: one U+FFFD per stray byte", []string{"\xe2\x9cx"}, "\uFFFD\uFFFDx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			term, _, _ := newTest(t, 20, 3)
			feed(t, term, nil, tt.chunks...)
			if got := term.Snapshot().Lines[0]; got != tt.want {
				t.Fatalf("row %q, want %q", got, tt.want)
			}
		})
	}
}

// A frozen terminal answers with its last screen and has let go of the
// emulator.
func TestFreeze(t *testing.T) {
	term, _, _ := newTest(t, 20, 4)
	feed(t, term, nil, "\x1b]2;done\a\x1b[31mred\x1b[0m line\r\nsecond")
	before, ansi, styled := term.Snapshot(), term.ANSI(), term.StyledRows()
	term.Freeze()
	after := term.Snapshot()
	if after.Text() != before.Text() || after.Title != "done" || term.ANSI() != ansi || len(term.StyledRows()) != len(styled) {
		t.Fatalf("frozen screen differs:\n%q\n%q", before.Text(), after.Text())
	}
	after.Lines[0] = "changed"
	if term.Snapshot().Lines[0] != before.Lines[0] {
		t.Fatal("a snapshot shares the frozen copy")
	}
	if _, err := term.Write([]byte("more")); err == nil {
		t.Fatal("a frozen terminal took output")
	}
	if term.emu != nil || term.Scrollback(10) != nil {
		t.Fatal("the emulator was kept")
	}
	term.Resize(30, 5)
	term.Freeze()
	term.Close()
}
