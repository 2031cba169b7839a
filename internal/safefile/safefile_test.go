package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "ok.toml")
	os.WriteFile(regular, []byte("name = \"x\"\n"), 0o600)
	big := filepath.Join(dir, "big.toml")
	os.WriteFile(big, []byte(strings.Repeat("x", 100)), 0o600)
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.toml")
	os.Symlink("/dev/zero", zero)
	link := filepath.Join(dir, "link.toml")
	os.Symlink(regular, link)
	sub := filepath.Join(dir, "sub.toml")
	os.Mkdir(sub, 0o700)

	for _, tt := range []struct {
		path string
		want error
	}{
		{regular, nil},
		{link, nil},
		{big, ErrTooLarge},
		{fifo, ErrNotRegular},
		{zero, ErrNotRegular},
		{sub, ErrNotRegular},
		{filepath.Join(dir, "missing.toml"), fs.ErrNotExist},
	} {
		done := make(chan error, 1)
		go func() { _, err := Read(tt.path, 50); done <- err }()
		select {
		case err := <-done:
			if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Errorf("Read(%s) = %v; want %v", filepath.Base(tt.path), err, tt.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Read(%s) hung", filepath.Base(tt.path))
		}
	}
}

// corral's own state files: a planted FIFO or /dev/zero link is refused at
// once, never waited on or read without end; another user's file is
// refused when corral can tell (as root, a file given to nobody).
func TestReadOwned(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "config.json")
	if err := os.WriteFile(ok, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadOwned(ok, 100); err != nil || string(b) != "{}" {
		t.Fatalf("own file: %q %v", b, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadOwned(fifo, 100); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Fatalf("fifo: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a FIFO blocked the read")
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadOwned(zero, 100); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("/dev/zero: %v", err)
	}
	if os.Getuid() == 0 {
		planted := filepath.Join(dir, "planted.json")
		os.WriteFile(planted, []byte(`{}`), 0o644)
		if err := os.Chown(planted, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadOwned(planted, 100); !errors.Is(err, ErrNotOwned) {
			t.Fatalf("another user's file: %v", err)
		}
	}
}

// WriteAtomic replaces a file whole, with its mode, and leaves no
// temporary file behind.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	for _, data := range []string{"one", "two, longer"} {
		if err := WriteAtomic(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		fi, _ := os.Stat(path)
		if err != nil || string(b) != data || fi.Mode().Perm() != 0o600 {
			t.Fatalf("after writing %q: %q %v %v", data, b, fi.Mode(), err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("files left: %v", ents)
	}
}
