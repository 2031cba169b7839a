package buildinfo

import (
	"crypto/sha256"
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
	for _, c := range []struct {
		name, data, want string
	}{
		{"at the start of a section", "\xff Go build ID: \"a/b/c/d\"\n \xff\x00\x00", "a/b/c/d"},
		{"after other bytes", strings.Repeat("\x90", 100) + "\xff Go build ID: \"x/y\"\n \xff", "x/y"},
		{"no end", "\xff Go build ID: \"a/b/c/d", ""},
		{"not quoted right", "\xff Go build ID: \"a\\q\"\n \xff", ""},
		{"none", "\x7fELF and nothing", ""},
	} {
		if got := rawBuildID([]byte(c.data)); got != c.want {
			t.Errorf("%s: rawBuildID = %q, want %q", c.name, got, c.want)
		}
		if got := contentID(strings.NewReader(c.data)); got != c.want[strings.LastIndexByte(c.want, '/')+1:] {
			t.Errorf("%s: contentID = %q", c.name, got)
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
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = contentID(strings.NewReader(string(data)))
	})
}
