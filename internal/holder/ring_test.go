package holder

import (
	"bytes"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRingCheckpoint: after a checkpoint the ring replays from it, on
// either side's mapping, and on Linux holds no more memory than the
// checkpoint and what followed it (the memfd's allocated blocks).
func TestRingCheckpoint(t *testing.T) {
	const size = 256 << 10
	type op struct {
		checkpoint bool
		n          int
	}
	for _, tc := range []struct {
		name string
		ops  []op
	}{
		{"none", []op{{false, 1 << 20}}},
		{"after a megabyte", []op{{false, 1 << 20}, {true, 10 << 10}}},
		{"then more output", []op{{false, 1 << 20}, {true, 10 << 10}, {false, 20 << 10}}},
		{"two", []op{{false, 300 << 10}, {true, 12 << 10}, {false, 50 << 10}, {true, 9 << 10}, {false, 3000}}},
		{"across the ring's end", []op{{false, size - 5000}, {true, 20 << 10}, {false, 7000}}},
		{"the first output", []op{{true, 100}, {false, 10}}},
		{"too large", []op{{false, 1 << 20}, {true, size*3/8 + 1}}},
		{"the checkpoint written over", []op{{true, 10 << 10}, {false, size}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, fd, err := NewRing(size)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			defer r.Close()
			d, err := MapRing(fd)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var all []byte
			from, after := 0, 0
			for i, o := range tc.ops {
				b := bytes.Repeat([]byte{byte('a' + i)}, o.n)
				for j := range b {
					if j%61 == 60 {
						b[j] = '\n' // not one page like another
					}
				}
				if o.checkpoint {
					if d.Checkpoint(b) != (o.n <= size*3/8) {
						t.Fatalf("checkpoint of %d bytes: written %v", o.n, !(o.n <= size*3/8))
					}
					if o.n <= size*3/8 {
						from, after = len(all), len(all)+o.n
					} else {
						continue
					}
				} else {
					for k := 0; k < len(b); k += 4096 {
						d.Append(b[k:min(k+4096, len(b))])
					}
				}
				all = append(all, b...)
			}
			want := all[max(0, len(all)-size):]
			if from >= len(all)-size {
				want = all[from:]
			}
			for side, ring := range map[string]*Ring{"daemon": d, "holder": r} {
				if got := ring.Bytes(); !bytes.Equal(got, want) {
					t.Errorf("%s's replay: %d bytes %.40q…, want %d bytes %.40q…", side, len(got), got, len(want), want)
				}
			}
			if got := d.SinceCheckpoint(); got != uint64(len(all)-after) {
				t.Errorf("since the checkpoint: %d, want %d", got, len(all)-after)
			}
			if runtime.GOOS != "linux" {
				return
			}
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				t.Fatal(err)
			}
			resident := int(st.Blocks * 512)
			// The pages of what is replayed, the header's, and one at
			// each end of what is kept that it shares with what is not.
			limit := len(want) + 3*4096
			if resident > limit {
				t.Errorf("%d bytes resident, more than %d for a replay of %d", resident, limit, len(want))
			}
			t.Logf("replay %d bytes, resident %d", len(want), resident)
		})
	}
}
