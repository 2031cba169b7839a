package buildinfo

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The build ID read from a binary is the one the go command reports.
func TestContentIDOfThisBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "tool", "buildid", exe).Output()
	if err != nil {
		t.Skipf("go tool buildid: %v", err)
	}
	id := strings.TrimSpace(string(out))
	want := id[strings.LastIndexByte(id, '/')+1:]
	f, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := contentID(f); got != want || got == "" {
		t.Fatalf("contentID = %q, want %q (build ID %q)", got, want, id)
	}
	sum := sha256.Sum256([]byte("go build content " + want))
	if got := fingerprintFile(exe); got != hex.EncodeToString(sum[:])[:12] {
		t.Fatalf("fingerprint %q is not of the build ID's content hash", got)
	}
}

func TestRawBuildID(t *testing.T) {
	const (
		a = "kOpa5LbpyBggBxZUWXpo"
		b = "PChjbm-x9nPRWvLKvtE9"
		c = "lJhHlm1O01Zhv_QrghJ4"
		d = "lbUkIUsDx1feJ3PQuNvS"
	)
	for _, c := range []struct {
		name, data, id, content string
	}{
		{"at the start of a section", "\xff Go build ID: \"" + a + "/" + b + "/" + c + "/" + d + "\"\n \xff\x00\x00", a + "/" + b + "/" + c + "/" + d, d},
		{"after other bytes, two parts", strings.Repeat("\x90", 100) + "\xff Go build ID: \"" + a + "/" + b + "\"\n \xff", a + "/" + b, b},
		{"no end", "\xff Go build ID: \"" + a + "/" + b, "", ""},
		{"not quoted right", "\xff Go build ID: \"a\\q\"\n \xff", "", ""},
		{"none", "\x7fELF and nothing", "", ""},
		// -ldflags=-buildid=X, as Bazel's rules_go links: the same for
		// every build, so no fingerprint at all.
		{"set by hand", "\xff Go build ID: \"redacted\"\n \xff", "redacted", ""},
		{"three parts", "\xff Go build ID: \"" + a + "/" + b + "/" + c + "\"\n \xff", a + "/" + b + "/" + c, ""},
		{"a part not a hash", "\xff Go build ID: \"" + a + "/x.y\"\n \xff", a + "/x.y", ""},
	} {
		if got := rawBuildID([]byte(c.data)); got != c.id {
			t.Errorf("%s: rawBuildID = %q, want %q", c.name, got, c.id)
		}
		if got := contentID(strings.NewReader(c.data)); got != c.content {
			t.Errorf("%s: contentID = %q, want %q", c.name, got, c.content)
		}
	}
}

// noteELF is a 64-bit little-endian ELF file with one PT_NOTE segment
// holding note.
func noteELF(note []byte) []byte {
	const ehsize, phsize = 64, 56
	f := make([]byte, ehsize+phsize)
	copy(f, "\x7fELF\x02\x01\x01")
	le := binary.LittleEndian
	le.PutUint16(f[16:], 2)  // ET_EXEC
	le.PutUint16(f[18:], 62) // EM_X86_64
	le.PutUint32(f[20:], 1)  // EV_CURRENT
	le.PutUint64(f[32:], ehsize)
	le.PutUint16(f[52:], ehsize)
	le.PutUint16(f[54:], phsize)
	le.PutUint16(f[56:], 1)
	ph := f[ehsize:]
	le.PutUint32(ph[0:], 4) // PT_NOTE
	le.PutUint64(ph[8:], uint64(len(f)))
	le.PutUint64(ph[32:], uint64(len(note)))
	le.PutUint64(ph[40:], uint64(len(note)))
	return append(f, note...)
}

// goNote is a Go build ID note (name "Go", type 4) whose descriptor size
// field says descSize, with desc after it, padded to 4 bytes.
func goNote(descSize uint32, desc string) []byte {
	n := make([]byte, 16, 16+len(desc)+3)
	binary.LittleEndian.PutUint32(n[0:], 4)
	binary.LittleEndian.PutUint32(n[4:], descSize)
	binary.LittleEndian.PutUint32(n[8:], 4)
	copy(n[12:], "Go\x00\x00")
	n = append(n, desc...)
	return append(n, make([]byte, -len(n)&3)...)
}

// An ELF note is read with its sizes checked: one whose descriptor size
// wraps when rounded up in 32 bits is no ID, not a panic.
func TestELFNote(t *testing.T) {
	id := "kOpa5LbpyBggBxZUWXpo/lbUkIUsDx1feJ3PQuNvS"
	if got := contentID(bytes.NewReader(noteELF(goNote(uint32(len(id)), id)))); got != "lbUkIUsDx1feJ3PQuNvS" {
		t.Fatalf("contentID of a well-formed note = %q", got)
	}
	for _, size := range []uint32{0xFFFFFFFD, 0xFFFFFFFF, 1 << 31, uint32(len(id)) + 1} {
		if got := contentID(bytes.NewReader(noteELF(goNote(size, id)))); got != "" {
			t.Errorf("descriptor size %#x: contentID = %q, want none", size, got)
		}
	}
}

// A file with no build ID is fingerprinted by its bytes.
func TestFingerprintWithoutBuildID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain")
	data := []byte("#!/bin/sh\necho not a Go binary\n")
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if got, want := fingerprintFile(path), hex.EncodeToString(sum[:])[:12]; got != want {
		t.Fatalf("fingerprint %q, want the file's own hash %q", got, want)
	}
	if got := fingerprintFile(filepath.Join(t.TempDir(), "missing")); got != "" {
		t.Fatalf("fingerprint of a missing file %q, want empty", got)
	}
}

// Any bytes, an ELF or Mach-O header among them, give an ID or none.
func FuzzContentID(f *testing.F) {
	exe, err := os.Executable()
	if err == nil {
		if b, err := os.ReadFile(exe); err == nil && len(b) > 8192 {
			f.Add(b[:8192])
		}
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Add([]byte("\xcf\xfa\xed\xfe"))
	f.Add([]byte("\xff Go build ID: \"a/b\"\n \xff"))
	f.Add(noteELF(goNote(0xFFFFFFFD, "kOpa5LbpyBggBxZUWXpo/lbUkIUsDx1feJ3PQuNvS")))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = contentID(strings.NewReader(string(data)))
	})
}
