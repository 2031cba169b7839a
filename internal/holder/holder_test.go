package holder

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRing(t *testing.T) {
	for _, tc := range []struct {
		size   int
		writes []string
		want   string
	}{
		{8, nil, ""},
		{8, []string{"abc"}, "abc"},
		{8, []string{"abc", "defgh"}, "abcdefgh"},
		{8, []string{"abc", "defghij"}, "cdefghij"},
		{8, []string{"0123456789abc"}, "56789abc"},
		{8, []string{"abcdef", "gh", "ijk"}, "defghijk"},
		{4, []string{"a", "b", "c", "d", "e"}, "bcde"},
	} {
		r := newRing(tc.size)
		for _, w := range tc.writes {
			r.write([]byte(w))
		}
		if got := string(r.bytes()); got != tc.want {
			t.Errorf("ring %d after %q: %q, want %q", tc.size, tc.writes, got, tc.want)
		}
	}
}

func TestFrames(t *testing.T) {
	var b bytes.Buffer
	if err := writeFrame(&b, tOutput, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	typ, p, err := readFrame(&b, nil)
	if err != nil || typ != tOutput || string(p) != "hello" {
		t.Fatalf("round trip: %q %q %v", typ, p, err)
	}
	if err := writeFrame(&b, tOutput, make([]byte, MaxFrame+1)); !errors.Is(err, ErrFrame) {
		t.Fatalf("writing an oversized frame: %v", err)
	}
	// A length over the limit is refused before anything is read.
	var h [5]byte
	h[0] = tOutput
	binary.BigEndian.PutUint32(h[1:], MaxFrame+1)
	if _, _, err := readFrame(bytes.NewReader(h[:]), nil); !errors.Is(err, ErrFrame) {
		t.Fatalf("reading an oversized frame: %v", err)
	}
	// A frame cut short.
	binary.BigEndian.PutUint32(h[1:], 10)
	if _, _, err := readFrame(bytes.NewReader(append(h[:], "abc"...)), nil); err == nil {
		t.Fatal("a truncated frame read")
	}
}

func TestProof(t *testing.T) {
	s := NewSecret()
	p := proof(s, "holder", "n1")
	if !checkProof(s, "holder", "n1", p) || checkProof(s, "daemon", "n1", p) || checkProof(s, "holder", "n2", p) || checkProof(NewSecret(), "holder", "n1", p) {
		t.Fatal("a proof is accepted where it must not be, or refused where it must be")
	}
}

// A peer of another uid is refused, on either side, before any secret
// is spoken.
func TestOtherUserRefused(t *testing.T) {
	dir, err := SocketDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "x.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		var b [256]byte
		n, _ := c.Read(b[:])
		got <- b[:n]
	}()
	wantUID = func() int { return os.Getuid() + 1 }
	defer func() { wantUID = os.Getuid }()
	_, err = Dial(sock, NewSecret(), 2*time.Second)
	if err == nil || !strings.Contains(err.Error(), "runs as uid") {
		t.Fatalf("dial a socket of another uid: %v", err)
	}
	if b := <-got; len(b) != 0 {
		t.Fatalf("the daemon spoke to a stranger: %q", b)
	}
}

// The folder of holder sockets must be private.
func TestSocketDirPrivate(t *testing.T) {
	state := t.TempDir()
	if err := os.Mkdir(filepath.Join(state, "holders"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := SocketDir(state); err == nil || !strings.Contains(err.Error(), "0700") {
		t.Fatalf("an open folder: %v", err)
	}
}

// FuzzNext: whatever a socket sends after the welcome, the daemon's side
// reads it as messages or an error, bounded, never a panic.
func FuzzNext(f *testing.F) {
	var b bytes.Buffer
	writeFrame(&b, tOutput, []byte("hi"))
	writeFrame(&b, tLive, nil)
	writeFrame(&b, tExit, []byte(`{"code":3}`))
	f.Add(b.Bytes())
	f.Add([]byte{'X', 0, 0, 0, 2, '{', '}'})
	f.Add([]byte{'O', 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &Conn{r: bufio.NewReader(bytes.NewReader(data))}
		for i := 0; i < 1000; i++ {
			m, err := c.Next()
			if err != nil {
				return
			}
			if len(m.Output) > MaxFrame {
				t.Fatalf("a message of %d bytes", len(m.Output))
			}
		}
	})
}
