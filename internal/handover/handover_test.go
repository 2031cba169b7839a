package handover

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The lock and the listening socket arrive: the lock is still held through
// the file that came, and the socket's queue is the new daemon's.
func TestSendReceive(t *testing.T) {
	dir := t.TempDir()
	lock, err := os.OpenFile(filepath.Join(dir, "daemon.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "corral.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lnFile, err := ln.File()
	if err != nil {
		t.Fatal(err)
	}
	defer lnFile.Close()

	recv, err := NewReceiver(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	if filepath.Dir(recv.Path()) != dir {
		t.Fatalf("the receiver listens at %s, outside %s", recv.Path(), dir)
	}
	sent := make(chan error, 1)
	go func() { sent <- Send(recv.Path(), lock, lnFile) }()
	in, err := recv.Receive(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	defer in.Lock.Close()
	defer in.Listener.Close()
	// Another open file of the lock cannot take it: it is held.
	other, _ := os.Open(filepath.Join(dir, "daemon.lock"))
	defer other.Close()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		t.Fatal("the lock is free after the hand-over")
	}
	// A client of the old socket is accepted by the inherited listener,
	// once the old daemon has closed its own (leaving the file, as it does).
	ln.SetUnlinkOnClose(false)
	ln.Close()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = in.Listener.(*net.UnixListener).SetDeadline(time.Now().Add(5 * time.Second))
	got, err := in.Listener.Accept()
	if err != nil {
		t.Fatalf("the inherited listener: %v", err)
	}
	got.Close()
}

// Anything else than the lock and the socket is refused, and nothing
// arriving in time is an error that says so.
func TestReceiveRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		send func(path string)
		want string
	}{
		{"nothing", func(string) {}, "did not pass its socket on"},
		{"no descriptors", func(path string) {
			c, err := net.Dial("unix", path)
			if err == nil {
				c.Write([]byte("corral"))
				c.Close()
			}
		}, "something else than its lock and socket"},
	} {
		recv, err := NewReceiver(dir)
		if err != nil {
			t.Fatal(err)
		}
		go tc.send(recv.Path())
		_, err = recv.Receive(300 * time.Millisecond)
		recv.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want …%s…", tc.name, err, tc.want)
		}
	}
	if err := Send(filepath.Join(dir, "nobody.sock"), os.Stdin, os.Stdin); err == nil {
		t.Error("Send to nobody succeeded")
	}
}
