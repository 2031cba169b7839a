package tty

import (
	"os"
	"testing"

	"github.com/corral-dev/corral/internal/osproc"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

func TestRawRestoreAndSize(t *testing.T) {
	ptmx, tt, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer ptmx.Close()
	defer tt.Close()
	fd := int(tt.Fd())
	if !IsTerminal(fd) {
		t.Fatal("a pty is not a terminal")
	}
	r, w, _ := os.Pipe()
	defer r.Close()
	defer w.Close()
	if IsTerminal(int(r.Fd())) {
		t.Fatal("a pipe is a terminal")
	}
	if restore := Raw(int(r.Fd())); restore == nil {
		t.Fatal("Raw on a pipe gave no restore function")
	} else {
		restore()
	}

	lflag := func() uint64 {
		tio, err := unix.IoctlGetTermios(fd, osproc.GetTermios)
		if err != nil {
			t.Fatal(err)
		}
		return uint64(tio.Lflag) // uint32 on Linux, uint64 on macOS
	}
	if lflag()&(unix.ECHO|unix.ICANON) == 0 {
		t.Fatal("a new pty is not cooked")
	}
	restore := Raw(fd)
	if got := lflag(); got&(unix.ECHO|unix.ICANON|unix.ISIG) != 0 {
		t.Fatalf("raw mode keeps echo, lines or signals: lflag %#x", got)
	}
	restore()
	if lflag()&(unix.ECHO|unix.ICANON) != unix.ECHO|unix.ICANON {
		t.Fatal("restore did not bring the terminal back")
	}

	if err := pty.Setsize(ptmx, &pty.Winsize{Cols: 97, Rows: 31}); err != nil {
		t.Fatal(err)
	}
	if cols, rows, ok := Size(fd); !ok || cols != 97 || rows != 31 {
		t.Fatalf("size %dx%d %v", cols, rows, ok)
	}
	if _, _, ok := Size(int(r.Fd())); ok {
		t.Fatal("a pipe has a size")
	}
}
