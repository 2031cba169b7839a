package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The page that hands the browser its sign-in address is the user's
// alone, wherever the socket's folder is and whoever can enter it.
func TestLaunchPagePrivate(t *testing.T) {
	for _, mode := range []os.FileMode{0o700, 0o755} {
		dir := filepath.Join(t.TempDir(), "sock")
		os.Mkdir(dir, mode)
		os.Chmod(dir, mode)
		t.Setenv("CORRAL_SOCKET", filepath.Join(dir, "s.sock"))
		const signIn = "http://127.0.0.1:1/b/x/?code=abc&x=<y>"
		page, err := launchPage(signIn)
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(page)
		fi, err := os.Stat(page)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := os.ReadFile(page)
		if !privateDir(filepath.Dir(page)) || fi.Mode().Perm() != 0o600 {
			t.Errorf("socket folder %v: page %s is %v", mode, page, fi.Mode())
		}
		if (mode == 0o700) != (filepath.Dir(page) == dir) {
			t.Errorf("socket folder %v: page in %s", mode, filepath.Dir(page))
		}
		if !strings.Contains(string(body), `url=http://127.0.0.1:1/b/x/?code=abc&amp;x=&lt;y&gt;"`) {
			t.Errorf("page:\n%s", body)
		}
	}
}
