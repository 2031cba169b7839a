package holder

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/osproc"
	"golang.org/x/sys/unix"
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
		r, fd, err := NewRing(tc.size)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.writes {
			r.Append([]byte(w))
		}
		if got := string(r.Bytes()); got != tc.want {
			t.Errorf("ring %d after %q: %q, want %q", tc.size, tc.writes, got, tc.want)
		}
		// The daemon's mapping sees the same bytes, and its appends.
		d, err := MapRing(fd)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(d.Bytes()); got != tc.want {
			t.Errorf("mapped ring %d after %q: %q, want %q", tc.size, tc.writes, got, tc.want)
		}
		d.Append([]byte("Z"))
		if got, want := string(r.Bytes()), (tc.want + "Z")[max(0, len(tc.want)+1-tc.size):]; got != want {
			t.Errorf("after the daemon's append: %q, want %q", got, want)
		}
		d.Close()
		r.Close()
		unix.Close(fd)
	}
}

// A daemon maps only a corral ring of a sane size.
func TestMapRingRefusesOthers(t *testing.T) {
	fd, err := osproc.MemfdCreate("other")
	if err != nil {
		t.Skip(err)
	}
	defer unix.Close(fd)
	if _, err := MapRing(fd); err == nil {
		t.Fatal("an empty memfd mapped as a ring")
	}
	unix.Ftruncate(fd, 4096)
	if _, err := MapRing(fd); err == nil {
		t.Fatal("a memfd without the ring's header mapped as a ring")
	}
	if _, _, err := NewRing(0); err == nil {
		t.Fatal("a ring of 0 bytes")
	}
	// A ring's header on memory that is not sealed at its size: the
	// other side could shrink it under the mapping.
	unsealed, err := osproc.MemfdCreate("unsealed")
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(unsealed)
	unix.Ftruncate(unsealed, ringHeader+4096)
	mem, _ := unix.Mmap(unsealed, 0, ringHeader+4096, unix.PROT_WRITE, unix.MAP_SHARED)
	copy(mem, ringMagic)
	binary.LittleEndian.PutUint64(mem[16:], 4096)
	unix.Munmap(mem)
	if _, err := MapRing(unsealed); err == nil || !strings.Contains(err.Error(), "sealed") {
		t.Fatalf("an unsealed ring mapped: %v", err)
	}
	// And a sealed ring cannot be shrunk.
	_, sealed, err := NewRing(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sealed)
	if err := unix.Ftruncate(sealed, 100); err == nil {
		t.Fatal("a sealed ring was shrunk")
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
	f.Add(append([]byte{'O', 0, 0, 0x20, 0}, bytes.Repeat([]byte("x"), 8192)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, w := connPair(t)
		go func() {
			w.Write(data)
			w.Close()
		}()
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

// connPair returns the daemon's side of a connection on a socket pair (no
// terminal: its Close must not close descriptor 0), and the holder's end
// to write to.
func connPair(t testing.TB) (*Conn, *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0) // SOCK_CLOEXEC is Linux's
	if err != nil {
		t.Fatal(err)
	}
	unix.CloseOnExec(fds[0])
	unix.CloseOnExec(fds[1])
	unix.SetNonblock(fds[0], true)
	f := os.NewFile(uintptr(fds[0]), "daemon")
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	uc := nc.(*net.UnixConn)
	rc, err := uc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	w := os.NewFile(uintptr(fds[1]), "holder")
	t.Cleanup(func() { uc.Close(); w.Close() })
	return &Conn{c: uc, rc: rc, pty: -1}, w
}

// readers are the two ways of reading a holder's connection: Run, in the
// caller's goroutine, and Watch, in the poller's (ended's error returned).
var readers = []struct {
	name string
	run  func(c *Conn, got func(Msg) bool) error
}{
	{"Run", (*Conn).Run},
	{"Watch", func(c *Conn, got func(Msg) bool) error {
		ended := make(chan error, 1)
		if err := c.Watch(got, func(err error) { ended <- err }); err != nil {
			return err
		}
		return <-ended
	}},
}

// Run and Watch hand over every frame however the bytes are cut, a frame
// bigger than its buffer, frames that come after a pause (a wait for the
// socket's next edge), skip unknown types, and tell a clean end from a
// cut frame.
func TestRunFrames(t *testing.T) {
	t.Parallel()
	for _, r := range readers {
		for _, cut := range []int{1, 3, 5, 4096, 70000} {
			t.Run(fmt.Sprint(r.name, cut), func(t *testing.T) { testRunFrames(t, cut, r.run) })
		}
	}

	c, w := connPair(t)
	writeFrame(w, tOutput, []byte("whole"))
	w.Write([]byte{tOutput, 0, 0, 0, 9, 'c', 'u'})
	w.Close()
	m, err := c.Next()
	if err != nil || string(m.Output) != "whole" {
		t.Fatalf("first: %q %v", m.Output, err)
	}
	if _, err := c.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a cut frame: %v, want ErrUnexpectedEOF", err)
	}
}

func testRunFrames(t *testing.T, cut int, run func(*Conn, func(Msg) bool) error) {
	big := bytes.Repeat([]byte("0123456789"), 30000) // 300 KB: many reads
	if cut < 10 {
		big = big[:20000] // a byte a write is slow
	}
	var all bytes.Buffer
	writeFrame(&all, tOutput, []byte("first"))
	writeFrame(&all, 'Z', []byte("a type from a newer holder"))
	writeFrame(&all, tOutput, big)
	writeFrame(&all, tLive, nil)
	for i := 0; i < 50; i++ {
		writeFrame(&all, tOutput, []byte(fmt.Sprintf("frame %d;", i)))
	}
	writeFrame(&all, tExit, []byte(`{"code":7}`))
	stream := all.Bytes()

	c, w := connPair(t)
	go func() {
		for b := stream; len(b) > 0; {
			n := min(cut, len(b))
			w.Write(b[:n])
			b = b[n:]
			if cut < 10 && len(b)%97 == 0 {
				time.Sleep(time.Millisecond) // let the reader drain and wait
			}
		}
		time.Sleep(20 * time.Millisecond) // the pause the next frame comes after
		writeFrame(w, tOutput, []byte("after a pause"))
		w.Close()
	}()
	var out bytes.Buffer
	var live, exit bool
	code := 0
	err := run(c, func(m Msg) bool {
		out.Write(m.Output)
		live = live || m.Live
		if m.Exit {
			exit, code = true, m.Code
		}
		return true
	})
	if !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v, want EOF", err)
	}
	want := "first" + string(big)
	for i := 0; i < 50; i++ {
		want += fmt.Sprintf("frame %d;", i)
	}
	want += "after a pause"
	if out.String() != want || !live || !exit || code != 7 {
		t.Fatalf("got %d bytes (want %d), live %v, exit %v code %d", out.Len(), len(want), live, exit, code)
	}
}

// A holder that goes right after its last output is seen gone: the
// hang-up's edge can fold into the output's, and Run must not wait for it.
func TestRunSeesHangUpAfterOutput(t *testing.T) {
	for _, r := range readers {
		for i := 0; i < 200; i++ {
			c, w := connPair(t)
			go func() {
				writeFrame(w, tOutput, []byte("last words"))
				w.Close()
			}()
			done := make(chan error, 1)
			go func() { done <- r.run(c, func(Msg) bool { return true }) }()
			select {
			case err := <-done:
				if !errors.Is(err, io.EOF) {
					t.Fatalf("%s %d: %v, want EOF", r.name, i, err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s %d: the hang-up after the last output was never seen", r.name, i)
			}
		}
	}
}

// A watched connection costs no goroutine while the holder says nothing,
// stops at got's word (what is left is read by the next Watch), and
// Close ends its watch with net.ErrClosed.
func TestWatchWaitsWithoutGoroutine(t *testing.T) {
	if _, err := thePoller(); err != nil {
		t.Fatal(err)
	}
	const n = 30
	base := runtime.NumGoroutine()
	cs := make([]*Conn, n)
	ws := make([]*os.File, n)
	ended := make([]chan error, n)
	got := make([]chan string, n)
	for i := range cs {
		cs[i], ws[i] = connPair(t)
		ended[i], got[i] = make(chan error, 1), make(chan string, 10)
		if err := cs[i].Watch(func(m Msg) bool {
			got[i] <- string(m.Output)
			return string(m.Output) != "stop"
		}, func(err error) { ended[i] <- err }); err != nil {
			t.Fatal(err)
		}
	}
	if g := runtime.NumGoroutine() - base; g > 0 {
		t.Fatalf("%d watched connections cost %d goroutines", n, g)
	}
	for i, w := range ws {
		writeFrame(w, tOutput, []byte(fmt.Sprint(i)))
	}
	for i := range cs {
		select {
		case s := <-got[i]:
			if s != fmt.Sprint(i) {
				t.Fatalf("connection %d got %q", i, s)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("connection %d got nothing", i)
		}
	}
	// Stopped by got, with a frame behind it in the same read.
	var b bytes.Buffer
	writeFrame(&b, tOutput, []byte("stop"))
	writeFrame(&b, tOutput, []byte("next"))
	ws[0].Write(b.Bytes())
	if err := <-ended[0]; err != nil {
		t.Fatalf("stopped by got: %v, want nil", err)
	}
	if m, err := cs[0].Next(); err != nil || string(m.Output) != "next" {
		t.Fatalf("after the stop: %q %v, want the frame behind it", m.Output, err)
	}
	<-got[0] // "stop"
	cs[1].Close()
	if err := <-ended[1]; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("closed: %v, want net.ErrClosed", err)
	}
	ws[1].Write([]byte{tOutput, 0, 0, 0, 1, 'x'})
	ws[2].Close()
	if err := <-ended[2]; !errors.Is(err, io.EOF) {
		t.Fatalf("the holder gone: %v, want EOF", err)
	}
}

// Frames written while nobody reads arrive with the next Next, and Next
// ends when its connection is closed.
func TestRunFrameBetweenCalls(t *testing.T) {
	c, w := connPair(t)
	for i := 0; i < 20; i++ {
		writeFrame(w, tOutput, []byte(fmt.Sprint(i)))
		m, err := c.Next()
		if err != nil || string(m.Output) != fmt.Sprint(i) {
			t.Fatalf("frame %d: %q %v", i, m.Output, err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Next()
		done <- err
	}()
	time.Sleep(20 * time.Millisecond) // Next is most likely waiting by now; ending it either way is the point
	c.c.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Next on a closed connection returned no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next went on waiting after its connection was closed")
	}
}
