package holder

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"
)

// runUntilQuiet runs c until the holder has said nothing for a while (a
// read deadline ends the wait that follows the last frame) and returns
// the outputs it was handed.
func runUntilQuiet(t *testing.T, c *Conn) [][]byte {
	t.Helper()
	c.SetDeadline(time.Now().Add(200 * time.Millisecond))
	var got [][]byte
	err := c.Run(func(m Msg) bool {
		got = append(got, bytes.Clone(m.Output))
		return true
	})
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Run: %v, want the deadline", err)
	}
	return got
}

// An inbox holds a buffer only while part of a frame waits for the rest:
// a pane whose holder is quiet holds none, and a frame cut anywhere is
// still read whole.
func TestInboxHoldsNoBufferWhileQuiet(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("x"), 3*inboxSize)
	cases := []struct {
		name    string
		outputs [][]byte
		cut     int // bytes of the stream held back until the first Run is over
	}{
		{"whole frames", [][]byte{[]byte("one"), []byte("two")}, 0},
		{"a frame larger than the buffer", [][]byte{big}, 0},
		{"cut in a frame's header", [][]byte{[]byte("one"), []byte("two")}, 5 + 3 + 2},
		{"cut in a frame's payload", [][]byte{[]byte("one"), []byte("two, longer")}, 5 + 3 + 5 + 4},
		{"cut in a large frame", [][]byte{big}, 2 * inboxSize},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each waits out its quiet (200 ms) once or twice
			c, peer := connPair(t)
			var stream []byte
			for _, o := range tc.outputs {
				stream = appendFrame(stream, tOutput, o)
			}
			first := stream
			if tc.cut > 0 {
				first = stream[:tc.cut]
			}
			if _, err := peer.Write(first); err != nil {
				t.Fatal(err)
			}
			got := runUntilQuiet(t, c)
			if tc.cut > 0 {
				if c.in.buf == nil || c.in.r == c.in.w {
					t.Fatalf("the start of a frame was let go: buf %d bytes, r %d, w %d", len(c.in.buf), c.in.r, c.in.w)
				}
				if _, err := peer.Write(stream[tc.cut:]); err != nil {
					t.Fatal(err)
				}
				got = append(got, runUntilQuiet(t, c)...)
			}
			if c.in.buf != nil {
				t.Errorf("a quiet inbox holds %d bytes", len(c.in.buf))
			}
			if len(got) != len(tc.outputs) {
				t.Fatalf("%d outputs, want %d", len(got), len(tc.outputs))
			}
			for i := range got {
				if !bytes.Equal(got[i], tc.outputs[i]) {
					t.Errorf("output %d: %d bytes %.20q, want %d bytes %.20q", i, len(got[i]), got[i], len(tc.outputs[i]), tc.outputs[i])
				}
			}
		})
	}
}
