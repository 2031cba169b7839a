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

// A process's start time is field 22 of its stat line, counted after a
// name that may hold spaces and parentheses.
func TestParseStatStart(t *testing.T) {
	for _, tc := range []struct {
		line  string
		start uint64
		ok    bool
	}{
		{"42 (sleep) S 1 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 123456 2240512 128", 123456, true},
		{"42 (a) b) (c) R 1 42 7 34816 42 4194304 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0", 99, true},
		{"42 (short) Z 1 42 42", 0, true}, // no start field: unknown
		{"42 sleep S 1 42 42", 0, false},
	} {
		p, ok := parseStat([]byte(tc.line))
		if ok != tc.ok || p.Start != tc.start {
			t.Errorf("parseStat(%q) = start %d, %v; want %d, %v", tc.line, p.Start, ok, tc.start, tc.ok)
		}
	}
}
