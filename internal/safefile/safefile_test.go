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
