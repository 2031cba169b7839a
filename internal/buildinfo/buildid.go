package buildinfo

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"encoding/binary"
	"io"
	"strconv"
	"strings"
)

// The Go linker writes a build ID into every binary it links:
// "actionID/…/contentID", whose last part is a hash of the binary's own
// bytes. Reading it takes a few kilobytes; hashing the whole binary, as
// a fingerprint without it must, reads tens of megabytes (~30 ms of CPU
// at every daemon's first status).

// goBuildIDPrefix and goBuildIDEnd frame the build ID where it is written
// as text: at the start of a Mach-O binary's __text section, and in any
// binary of a linker older than the ELF note.
var (
	goBuildIDPrefix = []byte("\xff Go build ID: \"")
	goBuildIDEnd    = []byte("\"\n \xff")
)

// scanSize is how much of a binary or section is looked through for the
// build ID written as text.
const scanSize = 32 << 10

// contentID returns the last part of the Go build ID of the binary r
// holds, or "" when it has none (a format other than ELF and Mach-O), it
// cannot be read, or it is not one the go command made: a linker told
// -buildid=X (Bazel's rules_go links every binary with "redacted") would
// give every build the same fingerprint.
func contentID(r io.ReaderAt) string {
	id := goBuildID(r)
	parts := strings.Split(id, "/")
	if len(parts) != 2 && len(parts) != 4 {
		return ""
	}
	for _, part := range parts {
		if !isHashPart(part) {
			return ""
		}
	}
	return parts[len(parts)-1]
}

// isHashPart reports whether s is a part of a Go build ID: a hash in the
// go command's URL-safe base64, 20 characters long.
func isHashPart(s string) bool {
	if len(s) != 20 {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func goBuildID(r io.ReaderAt) string {
	head := make([]byte, scanSize)
	n, err := r.ReadAt(head, 0)
	if n == 0 && err != nil {
		return ""
	}
	head = head[:n]
	if id := rawBuildID(head); id != "" {
		return id
	}
	switch {
	case bytes.HasPrefix(head, []byte(elf.ELFMAG)):
		return elfBuildID(r)
	case len(head) >= 4 && isMachO(binary.LittleEndian.Uint32(head)):
		return machoBuildID(r)
	}
	return ""
}

func isMachO(magic uint32) bool {
	return magic == macho.Magic32 || magic == macho.Magic64 || magic == macho.MagicFat
}

// rawBuildID finds the build ID written as a quoted string in data.
func rawBuildID(data []byte) string {
	i := bytes.Index(data, goBuildIDPrefix)
	if i < 0 {
		return ""
	}
	start := i + len(goBuildIDPrefix) - 1 // the opening quote
	j := bytes.Index(data[start+1:], goBuildIDEnd)
	if j < 0 {
		return ""
	}
	id, err := strconv.Unquote(string(data[start : start+1+j+1]))
	if err != nil {
		return ""
	}
	return id
}

// elfBuildID reads the "Go" note of type 4 from the binary's note
// segments.
func elfBuildID(r io.ReaderAt) string {
	f, err := elf.NewFile(r)
	if err != nil {
		return ""
	}
	const goBuildIDTag = 4
	budget := uint64(scanSize) // a Go binary's notes take a few hundred bytes
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE || p.Filesz < 16 || p.Filesz > budget {
			continue
		}
		budget -= p.Filesz
		note := make([]byte, p.Filesz)
		if _, err := r.ReadAt(note, int64(p.Off)); err != nil {
			continue
		}
		for len(note) >= 16 {
			// Sizes in 64 bits: a size near 2^32 rounded up in 32 would
			// wrap to a small one.
			nameSize := uint64(f.ByteOrder.Uint32(note))
			descSize := uint64(f.ByteOrder.Uint32(note[4:]))
			tag := f.ByteOrder.Uint32(note[8:])
			nameEnd := 12 + (nameSize+3)&^3
			descEnd := nameEnd + (descSize+3)&^3
			if descEnd > uint64(len(note)) {
				break
			}
			if tag == goBuildIDTag && nameSize == 4 && string(note[12:15]) == "Go\x00" {
				return string(note[nameEnd : nameEnd+descSize])
			}
			note = note[descEnd:]
		}
	}
	return ""
}

// machoBuildID reads the build ID at the start of the __text section.
func machoBuildID(r io.ReaderAt) string {
	f, err := macho.NewFile(r)
	if err != nil {
		return ""
	}
	s := f.Section("__text")
	if s == nil {
		return ""
	}
	buf := make([]byte, min(s.Size, scanSize))
	if _, err := r.ReadAt(buf, int64(s.Offset)); err != nil {
		return ""
	}
	return rawBuildID(buf)
}
