//go:build linux

package rawio

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A one-shot watch calls its fn once a readiness, not again until it is
// rearmed, and at once when it is rearmed on a descriptor still readable;
// removed, it calls nothing more.
func TestPollerOnce(t *testing.T) {
	pl, err := ThePoller()
	if err != nil {
		t.Fatal(err)
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	calls := make(chan uint64, 16)
	id, err := pl.AddOnce(fds[0], func(id uint64) { calls <- id })
	if err != nil {
		t.Fatal(err)
	}
	want := func(what string) {
		t.Helper()
		select {
		case got := <-calls:
			if got != id {
				t.Fatalf("%s: fn got id %d, want %d", what, got, id)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: fn not called", what)
		}
	}
	// None is called for: the window is a bound on a call that must not come.
	none := func(what string) {
		t.Helper()
		select {
		case <-calls:
			t.Fatalf("%s: fn called", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
	none("nothing written")
	unix.Write(fds[1], []byte("a"))
	want("written")
	unix.Write(fds[1], []byte("b"))
	none("written again, not rearmed")
	if err := pl.Rearm(id, fds[0]); err != nil {
		t.Fatal(err)
	}
	want("rearmed while readable")
	buf := make([]byte, 8)
	if n, _ := Read(uintptr(fds[0]), buf); n != 2 {
		t.Fatalf("read %d bytes, want 2", n)
	}
	if err := pl.Rearm(id, fds[0]); err != nil {
		t.Fatal(err)
	}
	none("rearmed, drained")
	pl.Remove(id, fds[0])
	unix.Write(fds[1], []byte("c"))
	none("removed")
	if err := pl.Rearm(id, fds[0]); err == nil {
		t.Fatal("rearmed a removed watch")
	}
}
