package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The state folder is checked as the socket folder is: the fallback in the
// temporary folder (HOME and XDG_STATE_HOME unset) that another user made
// first, writable by all, is refused with the fix; a private one is made.
func TestCheckStateDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("CORRAL_STATE_DIR", "")
	top := filepath.Join(tmp, fmt.Sprintf("corral-%d", os.Getuid()))

	dir, err := CheckStateDir()
	if err != nil {
		t.Fatalf("a fresh fallback: %v", err)
	}
	if dir != filepath.Join(top, "state") {
		t.Fatalf("state folder %s", dir)
	}
	for _, d := range []string{top, dir} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v, want a private folder", d, fi.Mode(), err)
		}
	}

	for _, bad := range []string{top, dir} {
		if err := os.Chmod(bad, 0o777); err != nil {
			t.Fatal(err)
		}
		_, err := CheckStateDir()
		if err == nil || !strings.Contains(err.Error(), "refusing the state folder "+bad) || !strings.Contains(err.Error(), "CORRAL_STATE_DIR") {
			t.Fatalf("%s mode 777: %v", bad, err)
		}
		os.Chmod(bad, 0o700)
	}

	// A link in its place is refused too.
	os.RemoveAll(dir)
	if err := os.Symlink(tmp, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckStateDir(); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Fatalf("a link: %v", err)
	}

	// A folder the user names is checked as well.
	mine := filepath.Join(tmp, "mine")
	os.Mkdir(mine, 0o777)
	os.Chmod(mine, 0o777)
	t.Setenv("CORRAL_STATE_DIR", mine)
	if _, err := CheckStateDir(); err == nil {
		t.Fatal("a state folder others can write to was taken")
	}
}
