package tmuxctl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestUnescape(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		bad            int
	}{
		{"plain", "hello world", "hello world", 0},
		{"empty", "", "", 0},
		{"backslash", `a\134b`, `a\b`, 0},
		{"crlf", `line\015\012`, "line\r\n", 0},
		{"escape", `\033[31mred\033[0m`, "\x1b[31mred\x1b[0m", 0},
		{"nul and ctrl-c", `\000\003`, "\x00\x03", 0},
		{"highest", `\377`, "\xff", 0},
		{"utf-8 as is", "café ✻", "café ✻", 0},
		{"escaped backslash then digits", `\134012`, `\012`, 0},
		{"trailing backslash", `ab\`, `ab\`, 1},
		{"short", `\01`, `\01`, 1},
		{"not octal", `\019x`, `\019x`, 1},
		{"too big", `\400`, `\400`, 1},
		{"two bad", `\x\y`, `\x\y`, 2},
		{"bad then good", `\9\011`, "\\9\t", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, bad := unescape(nil, []byte(tc.in))
			if string(got) != tc.want || bad != tc.bad {
				t.Errorf("unescape(%q) = %q, %d bad; want %q, %d bad", tc.in, got, bad, tc.want, tc.bad)
			}
		})
	}
}

func TestParseLine(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     line
	}{
		{"output", `%output %3 hi\015\012`, line{kind: kindOutput, pane: b("%3"), value: b(`hi\015\012`)}},
		{"output with spaces", `%output %12 a : b `, line{kind: kindOutput, pane: b("%12"), value: b("a : b ")}},
		{"output empty", `%output %3 `, line{kind: kindOutput, pane: b("%3"), value: b("")}},
		{"output no value", `%output %3`, line{kind: kindOutput, pane: b("%3")}},
		{"output bad pane", `%output 3 hi`, line{}},
		{"output bad pane 2", `%output %3x hi`, line{}},
		{"extended", `%extended-output %3 120 : a : b`, line{kind: kindOutput, pane: b("%3"), value: b("a : b")}},
		{"extended future args", `%extended-output %3 0 x y : v`, line{kind: kindOutput, pane: b("%3"), value: b("v")}},
		{"extended empty", `%extended-output %3 0 :`, line{kind: kindOutput, pane: b("%3")}},
		{"extended no colon", `%extended-output %3 0 v`, line{}},
		{"begin", `%begin 1363006971 2 1`, line{kind: kindBegin, guard: b("1363006971 2 1"), control: true}},
		{"begin hook", `%begin 1363006971 2 0`, line{kind: kindBegin, guard: b("1363006971 2 0")}},
		{"end", `%end 1363006971 2 1`, line{kind: kindEnd, guard: b("1363006971 2 1"), control: true}},
		{"error", `%error 1363006971 2 1`, line{kind: kindError, guard: b("1363006971 2 1"), control: true}},
		{"begin short", `%begin 1 2`, line{}},
		{"begin words", `%begin a b c`, line{}},
		{"notify", `%layout-change @1 c68d,100x30,0,0,1 c68d,100x30,0,0,1 *`,
			line{kind: kindNotify, name: b("layout-change"), value: b("@1 c68d,100x30,0,0,1 c68d,100x30,0,0,1 *")}},
		{"notify bare", `%sessions-changed`, line{kind: kindNotify, name: b("sessions-changed")}},
		{"exit reason", `%exit server exited`, line{kind: kindNotify, name: b("exit"), value: b("server exited")}},
		{"pause", `%pause %3`, line{kind: kindNotify, name: b("pause"), value: b("%3")}},
		{"garbage", `hello`, line{}},
		{"percent alone", `%`, line{}},
		{"percent space", `% x`, line{}},
		{"upper name", `%Output %3 x`, line{}},
		{"empty", ``, line{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseLine([]byte(tc.in))
			if got.kind != tc.want.kind || !bytes.Equal(got.pane, tc.want.pane) || !bytes.Equal(got.value, tc.want.value) ||
				!bytes.Equal(got.name, tc.want.name) || !bytes.Equal(got.guard, tc.want.guard) || got.control != tc.want.control {
				t.Errorf("parseLine(%q) = %+v; want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func b(s string) []byte { return []byte(s) }

// A reply ends only at the %end or %error that repeats its %begin: a
// captured row reading like an %end is a row.
func TestCloses(t *testing.T) {
	g := b("1700000000 42 1")
	for _, tc := range []struct {
		in           string
		end, failure bool
	}{
		{"%end 1700000000 42 1", true, false},
		{"%error 1700000000 42 1", true, true},
		{"%end 1700000000 41 1", false, false},
		{"%end 1700000000 42 0", false, false},
		{"%end 1700000000 42 1 ", false, false},
		{"%endx", false, false},
		{"row text", false, false},
	} {
		end, failed := closes(b(tc.in), g)
		if end != tc.end || failed != tc.failure {
			t.Errorf("closes(%q) = %v, %v; want %v, %v", tc.in, end, failed, tc.end, tc.failure)
		}
	}
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // longer than the reader's buffer
	in := "one\n" + long + "\n\n" + strings.Repeat("y", 300<<10) + "\nlast"
	lr := newLineReader(strings.NewReader(in))
	lr.max = 250 << 10
	var got []string
	var errs []error
	for {
		l, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		got = append(got, string(l))
	}
	want := []string{"one", long, "", "last"}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %d bytes, want %d", i, len(got[i]), len(want[i]))
		}
	}
	if len(errs) != 1 || !errors.Is(errs[0], errLong) {
		t.Errorf("errors %v; want one errLong for the line over the bound", errs)
	}
}

// What tmux writes is read back as the bytes the pane wrote.
func TestEscapeRoundTrip(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	got, bad := unescape(nil, escape(nil, all))
	if !bytes.Equal(got, all) || bad != 0 {
		t.Fatalf("round trip: %q, %d bad", got, bad)
	}
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		`%output %3 hi\015\012`, `%extended-output %3 0 : x`, `%begin 1 2 1`, `%end 1 2 1`,
		`%error 1 2 1`, `%exit`, `%layout-change @1 x`, `\`, `\1`, `\777`, "%output %1 \\", "%extended-output %1 :",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		l := parseLine(in)
		if l.kind == kindOutput {
			out, _ := unescape(nil, l.value)
			if len(out) > len(l.value) {
				t.Fatalf("unescape grew %q", l.value)
			}
		}
		out, bad := unescape(nil, in)
		if bad == 0 && !bytes.Contains(in, []byte{'\\'}) && !bytes.Equal(out, in) {
			t.Fatalf("unescape changed %q", in)
		}
		// Escaping is undone exactly.
		back, bad := unescape(nil, escape(nil, in))
		if bad != 0 || !bytes.Equal(back, in) {
			t.Fatalf("round trip of %q: %q, %d bad", in, back, bad)
		}
	})
}

// realistic %output lines: a coding agent's redraws, with colours, UTF-8
// and line ends, as tmux escapes them.
func outputLines() [][]byte {
	var lines [][]byte
	for i := range 64 {
		raw := fmt.Sprintf("\x1b[2K\x1b[1G\x1b[38;5;%dm✻ Thinking… (%ds · ↑ %d tokens)\x1b[39m\r\n"+
			"\x1b[48;5;236m > %s\x1b[49m \\ path\\to\\file.go:%d\r\n", i, i, i*37, strings.Repeat("text ", i%9), i)
		lines = append(lines, fmt.Appendf(nil, "%%extended-output %%%d 12 : %s", i%4, escape(nil, []byte(raw))))
	}
	return lines
}

func BenchmarkParseOutput(b *testing.B) {
	lines := outputLines()
	n := 0
	for _, l := range lines {
		n += len(l) + 1
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		for _, l := range lines {
			pl := parseLine(l)
			if pl.kind != kindOutput {
				b.Fatal("not output")
			}
			buf, _ = unescape(buf[:0], pl.value)
		}
	}
}
