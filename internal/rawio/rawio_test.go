package rawio

import (
	"bytes"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// nonBlockingMaster opens a terminal pair with a non-blocking master in
// the poller.
func nonBlockingMaster(t *testing.T) (*os.File, *os.File) {
	m, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no terminals here: %v", err)
	}
	fd, err := unix.FcntlInt(m.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	m.Close()
	if err != nil {
		t.Fatal(err)
	}
	unix.SetNonblock(fd, true)
	master := os.NewFile(uintptr(fd), "ptmx")
	t.Cleanup(func() { master.Close(); tty.Close() })
	return master, tty
}

// A program that prints and goes at once is read to its last byte and its
// hang-up seen, however the two edges fall.
func TestReadTerminalSeesHangUpAfterOutput(t *testing.T) {
	for i := 0; i < 100; i++ {
		master, tty := nonBlockingMaster(t)
		rc, err := master.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		done := make(chan struct{})
		var stop atomic.Bool
		go func() {
			ReadTerminal(rc, &stop, func(b []byte) { got.Write(b) })
			close(done)
		}()
		if i%2 == 0 {
			time.Sleep(time.Millisecond) // the reader waits first
		}
		tty.Write([]byte(strings.Repeat("last words ", 50)))
		tty.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("run %d: the hang-up after the last output was never seen", i)
		}
		if want := strings.Repeat("last words ", 50); got.String() != want {
			t.Fatalf("run %d: read %q", i, got.String())
		}
	}
}

// stop ends a reader that is never told EAGAIN.
func TestReadTerminalStops(t *testing.T) {
	master, tty := nonBlockingMaster(t)
	rc, _ := master.SyscallConn()
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		ReadTerminal(rc, &stop, func([]byte) {})
		close(done)
	}()
	go func() {
		for {
			if _, err := tty.Write(bytes.Repeat([]byte("x"), 4096)); err != nil {
				return
			}
		}
	}()
	time.Sleep(20 * time.Millisecond) // pacing: the reader runs under the flood a while before the stop
	stop.Store(true)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a stopped reader went on reading")
	}
}
