package osproc

import (
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Input written to a pty's master is counted as soon as the write
// returns: the kernel moves it to the terminal's queue a moment later,
// and a count of 0 then would say the program had read it.
func TestInputQueuedCountsWhatWasJustWritten(t *testing.T) {
	m, tty, err := pty.Open()
	if err != nil {
		t.Skip(err)
	}
	defer m.Close()
	defer tty.Close()
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Lflag &^= unix.ICANON | unix.ECHO | unix.ISIG
	tio.Iflag &^= unix.ICRNL
	if err := unix.IoctlSetTermios(int(tty.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	peer, err := OpenPeer(int(m.Fd()), unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(peer)
	buf := make([]byte, 64)
	for i := range 2000 {
		if _, err := m.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		if n, err := InputQueued(peer); err != nil || n != 5 {
			t.Fatalf("write %d: InputQueued = %d, %v; want 5", i, n, err)
		}
		for got := 0; got < 5; {
			k, err := tty.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			got += k
		}
	}
}
