// Package safefile reads files from folders other people's programs can
// write to (rules, config, policies) without trusting what is there: only
// regular files, opened without blocking, read no further than a cap.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNotRegular is returned for a FIFO, a device, a socket or a folder.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned for a file longer than the cap.
var ErrTooLarge = errors.New("file too large")

// Read returns the contents of the regular file at path (symbolic links
// followed), at most max bytes. A FIFO is opened without waiting for a
// writer and refused, as is a device (a link to /dev/zero never ends); the
// cap is enforced while reading, so a file that grows is still bounded.
// Errors wrap fs.ErrNotExist when there is no file.
func Read(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return readOpen(f, path, info, max)
}

func readOpen(f *os.File, path string, info fs.FileInfo, max int64) ([]byte, error) {
	if !info.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (%s); corral reads only regular files here", ErrNotRegular, kind(info.Mode()))}
	}
	if info.Size() > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %d bytes; the limit is %d", ErrTooLarge, info.Size(), max)}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)}
	}
	return data, nil
}

// ErrNotOwned is returned for a file another user owns.
var ErrNotOwned = errors.New("owned by another user")

// StateMax bounds a file of corral's own state (a fleet config, the
// hub's credentials, a certificate).
const StateMax = 4 << 20

// ReadOwned is Read for corral's own state: the file must also belong to
// the user corral runs as. Another user's file there was planted.
func ReadOwned(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (uid %d, not you: uid %d); corral reads only its own state files: remove it", ErrNotOwned, st.Uid, os.Getuid())}
	}
	return readOpen(f, path, info, max)
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// WriteAtomic replaces the file at path with data: a temporary file in
// the same folder, written and synced, renamed over it, and the folder
// synced, so a crash leaves the old file or the new one, never a part.
func WriteAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
