package term

import (
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Per-rune facts for the print path, computed once per process from the
// same segmenter and width tables the reference emulator uses, so the
// screen agrees with it cell for cell.
//
// A rune is "simple" when no grapheme rule can join it to the rune before
// or after it unless that other rune is itself not simple: it is not a
// combining mark, joiner, spacing mark, prepend, regional indicator or
// Hangul jamo. Between two simple runes a cluster boundary is certain, so
// the pending cluster can be written without waiting for more input.
const (
	infoWidthMask = 0x3
	infoSimple    = 0x4
	infoKnown     = 0x8
)

// runeBlocks holds the facts of the Basic Multilingual Plane in blocks of
// 256 runes, filled on first use.
var runeBlocks [256]atomic.Pointer[[256]uint8]

var runeBlockMu sync.Mutex

func runeInfo(r rune) uint8 {
	if r < 0x10000 && r >= 0 {
		blk := runeBlocks[r>>8].Load()
		if blk == nil {
			blk = fillBlock(int(r >> 8))
		}
		return blk[r&0xff]
	}
	return computeInfo(r)
}

func fillBlock(i int) *[256]uint8 {
	runeBlockMu.Lock()
	defer runeBlockMu.Unlock()
	if blk := runeBlocks[i].Load(); blk != nil {
		return blk
	}
	blk := new([256]uint8)
	for j := range 256 {
		blk[j] = computeInfo(rune(i<<8 | j))
	}
	runeBlocks[i].Store(blk)
	return blk
}

func computeInfo(r rune) uint8 {
	var buf [2 * utf8.UTFMax]byte
	one := utf8.AppendRune(buf[:0], r)
	_, w := ansi.FirstGraphemeCluster(one, ansi.GraphemeWidth)
	info := uint8(min(max(w, 0), 2)) | infoKnown
	if r < 0x20 || (r >= 0x7f && r < 0xa0) {
		return info
	}
	n := len(one)
	before := append(append([]byte(nil), 'a'), one...) // does r extend what precedes it?
	after := append(append([]byte(nil), one...), 'a')  // does r bind to what follows (prepend)?
	twice := append(append([]byte(nil), one...), one...)
	if c, _ := ansi.FirstGraphemeCluster(before, ansi.GraphemeWidth); len(c) != 1 {
		return info
	}
	if c, _ := ansi.FirstGraphemeCluster(after, ansi.GraphemeWidth); len(c) != n {
		return info
	}
	if c, _ := ansi.FirstGraphemeCluster(twice, ansi.GraphemeWidth); len(c) != n {
		return info
	}
	return info | infoSimple
}
