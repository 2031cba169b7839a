package holder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/corral-dev/corral/internal/osproc"
	"golang.org/x/sys/unix"
)

// Ring keeps a pane's newest output in memory shared by its holder and
// the daemon (a memfd both map). Whoever reads the terminal appends what
// it reads: while a daemon reads it, the holder does nothing at all per
// frame, and after a crash the next daemon replays the ring the last one
// filled. One side appends at a time: the holder reads the terminal only
// while no daemon does.
type Ring struct {
	mem     []byte // the mapping: header, then data
	data    []byte
	private bool // the holder's own memory, not a mapping
}

// Ring layout: a header of ringHeader bytes (magic, data size, bytes ever
// written, where the last checkpoint begins and where it ends), then the
// data. Builds before checkpoints leave the last two fields zero and do
// not read them: a zero says "replay all the ring holds", as they do.
const (
	ringHeader = 64
	ringMagic  = "corral ring v1\x00\x00"
	// MaxRing bounds the ring a daemon maps.
	MaxRing = 64 << 20
)

// NewRing makes a ring of size bytes and returns it with its memfd
// (close-on-exec, sealed at its size so that no side resizes it under the
// others), to pass to daemons. Where memfds
// are missing it returns a ring of the process's own memory and fd -1:
// the holder then sends the output itself.
func NewRing(size int) (*Ring, int, error) {
	if size <= 0 || size > MaxRing {
		return nil, -1, fmt.Errorf("ring of %d bytes: the size must be between 1 and %d", size, MaxRing)
	}
	fd, err := osproc.MemfdCreate("corral-ring")
	if err != nil {
		mem := make([]byte, ringHeader+size)
		copy(mem, ringMagic)
		binary.LittleEndian.PutUint64(mem[16:], uint64(size))
		return &Ring{mem: mem, data: mem[ringHeader:], private: true}, -1, nil
	}
	if err := unix.Ftruncate(fd, int64(ringHeader+size)); err != nil {
		unix.Close(fd)
		return nil, -1, fmt.Errorf("ring: %w", err)
	}
	if err := osproc.SealSize(fd); err != nil {
		unix.Close(fd)
		return nil, -1, fmt.Errorf("ring: seal: %w", err)
	}
	r, err := mapRing(fd, ringHeader+size)
	if err != nil {
		unix.Close(fd)
		return nil, -1, err
	}
	copy(r.mem, ringMagic)
	binary.LittleEndian.PutUint64(r.mem[16:], uint64(size))
	return r, fd, nil
}

// MapRing maps the ring a holder passed. The memfd may be closed after.
func MapRing(fd int) (*Ring, error) {
	if !osproc.SealedAtSize(fd) {
		return nil, errors.New("ring: the shared memory is not sealed at its size")
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("ring: %w", err)
	}
	if st.Size <= ringHeader || st.Size > ringHeader+MaxRing {
		return nil, fmt.Errorf("ring: a shared ring of %d bytes", st.Size)
	}
	r, err := mapRing(fd, int(st.Size))
	if err != nil {
		return nil, err
	}
	if string(r.mem[:16]) != ringMagic || binary.LittleEndian.Uint64(r.mem[16:]) != uint64(len(r.data)) {
		r.Close()
		return nil, errors.New("ring: the shared memory is not a corral ring of its size")
	}
	return r, nil
}

func mapRing(fd, size int) (*Ring, error) {
	// Mapped to the end of its last page, which is not to be read or
	// written past size (SIGBUS) but may be released (see release).
	mem, err := unix.Mmap(fd, 0, int(roundPage(uint64(size))), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("ring: map: %w", err)
	}
	mem = mem[:size]
	return &Ring{mem: mem, data: mem[ringHeader:]}, nil
}

// written counts the bytes ever appended (the mapping is page-aligned, so
// the counter is too).
func (r *Ring) written() *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&r.mem[24]))
}

// from is where the last checkpoint begins, counted in bytes ever written.
func (r *Ring) from() *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&r.mem[32]))
}

// after is where the last checkpoint ends.
func (r *Ring) after() *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&r.mem[40]))
}

// Append adds p, dropping the oldest bytes beyond the ring's size.
func (r *Ring) Append(p []byte) {
	size := uint64(len(r.data))
	w := r.written().Load()
	total := uint64(len(p))
	if total > size {
		p = p[total-size:]
	}
	at := (w + total - uint64(len(p))) % size
	n := copy(r.data[at:], p)
	copy(r.data, p[n:])
	r.written().Store(w + total)
}

// Checkpoint appends cp, bytes that redraw everything written before
// them (term.Checkpoint): a replay begins there, and the memory of what
// the ring held before it is given back (on Linux; elsewhere it stays).
// A checkpoint larger than 3/8 of the ring is not written (it reports
// false): the last one and the output since must fit with it, or a crash
// while it is written leaves no checkpoint whole.
func (r *Ring) Checkpoint(cp []byte) bool {
	size := uint64(len(r.data))
	if len(cp) == 0 || uint64(len(cp)) > size*3/8 {
		return false
	}
	at := r.written().Load()
	r.Append(cp)
	r.after().Store(at + uint64(len(cp)))
	r.from().Store(at)
	if !r.private {
		// Everything but [at, at+len(cp)) may go: from its end, round
		// the ring to its start.
		r.release((at+uint64(len(cp)))%size, size-uint64(len(cp)))
	}
	return true
}

// SinceCheckpoint is how many bytes were written after the last
// checkpoint (all ever written when there was none).
func (r *Ring) SinceCheckpoint() uint64 {
	w, a := r.written().Load(), r.after().Load()
	if a > w {
		return w // not a checkpoint of this ring's
	}
	return w - a
}

// release gives back the whole pages of n bytes of data from at, going
// round the ring's end.
func (r *Ring) release(at, n uint64) {
	size := uint64(len(r.data))
	for n > 0 {
		k := min(n, size-at)
		// The mapping's offsets: the data follows the header.
		start := roundPage(ringHeader + at)
		end := (ringHeader + at + k) &^ (pageSize - 1)
		if at+k == size {
			// The data's last page is the memfd's last, partly past
			// its end: nothing else is in it.
			end = roundPage(ringHeader + size)
		}
		if start < end {
			punch(r.mem[start:end])
		}
		at, n = (at+k)%size, n-k
	}
}

var pageSize = uint64(unix.Getpagesize())

func roundPage(n uint64) uint64 { return (n + pageSize - 1) &^ (pageSize - 1) }

// Bytes returns a copy of what the ring holds, oldest first: from the
// last checkpoint when the ring still holds it.
func (r *Ring) Bytes() []byte {
	size := uint64(len(r.data))
	w := r.written().Load()
	n := min(w, size)
	if f := r.from().Load(); f <= w && w-f < n {
		n = w - f
	}
	out := make([]byte, n)
	at := (w - n) % size
	k := copy(out, r.data[at:])
	copy(out[k:], r.data)
	return out
}

// Close unmaps the ring; it is not to be used after.
func (r *Ring) Close() error {
	if r.mem == nil || r.private {
		return nil
	}
	err := unix.Munmap(r.mem)
	r.mem, r.data = nil, nil
	return err
}
