package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestSafeWriter(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text\n\tindented", "plain text\n\tindented"},
		{"\x1b]52;c;ZXZpbA==\x07name", `\x1b]52;c;ZXZpbA==\x07name`},
		{"\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
		{"\x1b[2Jgone", `\x1b[2Jgone`},
		{"a\rb\x7fc", `a\x0db\x7fc`},
		{"csi\u009b2J", `csi\u009b2J`},
		{"rtl\u202eevil", `rtl\u202eevil`},
		{"ünïcödé ✳ ❯", "ünïcödé ✳ ❯"},
		{"bad \xff byte", "bad \uFFFD byte"},
	} {
		var b bytes.Buffer
		w := &safeWriter{w: &b}
		if _, err := w.Write([]byte(c.in)); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("%q → %q, want %q", c.in, b.String(), c.want)
		}
	}
	// A character cut between two writes is written whole.
	var b bytes.Buffer
	w := &safeWriter{w: &b}
	in := []byte("x\u009by✳")
	for i := range in {
		w.Write(in[i : i+1])
	}
	if b.String() != `x\u009by✳` {
		t.Errorf("byte by byte: %q", b.String())
	}
}

// JSON through the writer stays valid and means the same, with nothing a
// terminal would obey left raw.
func TestSafeWriterJSON(t *testing.T) {
	v := map[string]string{"name": "\x1b]52;c;x\x07", "message": "\u009b2J\u202e", "ok": "✳ fine"}
	var b bytes.Buffer
	enc := json.NewEncoder(&safeWriter{w: &b})
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	var back map[string]string
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatalf("not JSON any more: %v: %s", err, b.String())
	}
	for k := range v {
		if back[k] != v[k] {
			t.Errorf("%s: %q, want %q", k, back[k], v[k])
		}
	}
	if strings.ContainsAny(b.String(), "\x1b\x07") || strings.Contains(b.String(), "\u009b") || strings.Contains(b.String(), "\u202e") {
		t.Errorf("raw controls in %q", b.String())
	}
}

func FuzzSafeWriter(f *testing.F) {
	f.Add([]byte("\x1b]0;t\x07\u009b\u202e✳"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var b bytes.Buffer
		w := &safeWriter{w: &b}
		if n, err := w.Write(in); err != nil || n != len(in) {
			t.Fatalf("Write: %d, %v", n, err)
		}
		w.Write([]byte("\n")) // flushes a cut sequence as a bad byte
		out := b.String()
		if strings.ContainsAny(out, "\x1b\x07\x7f\r") || strings.Contains(out, "\u009b") || strings.Contains(out, "\u202e") {
			t.Fatalf("raw control in %q", out)
		}
	})
}
