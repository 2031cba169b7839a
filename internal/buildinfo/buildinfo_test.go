package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "1111111111111111"}, {Key: "vcs.time", Value: "2026-11-01T00:00:00Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	for _, c := range []struct {
		name                  string
		bi                    *debug.BuildInfo
		version, commit, date string
		want                  Info
	}{
		{"nothing known", nil, "", "", "", Info{Version: "(devel)"}},
		{"a local build", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "", "", "",
			Info{Version: "(devel)", Go: "go1.26.8"}},
		{"go install", vcs, "", "", "",
			Info{Version: "v0.3.0", Commit: "1111111111111111", Time: "2026-11-01T00:00:00Z", Modified: true, Go: "go1.26.8"}},
		{"a release stamps all three", vcs, "v1.2.3", "2222222222222222", "2026-12-02T19:00:00Z",
			Info{Version: "v1.2.3", Commit: "2222222222222222", Time: "2026-12-02T19:00:00Z", Go: "go1.26.8"}},
		{"the same commit keeps what the tree held", vcs, "v1.2.3", "1111111111111111", "",
			Info{Version: "v1.2.3", Commit: "1111111111111111", Time: "2026-11-01T00:00:00Z", Modified: true, Go: "go1.26.8"}},
		{"only a version", nil, "v1.2.3", "", "", Info{Version: "v1.2.3"}},
		{"a release tool that could not ask git", vcs, "v1.2.3", "none", "none",
			Info{Version: "v1.2.3", Commit: "1111111111111111", Time: "2026-11-01T00:00:00Z", Modified: true, Go: "go1.26.8"}},
	} {
		if got := resolve(c.bi, c.version, c.commit, c.date); got != c.want {
			t.Errorf("%s: resolve = %+v, want %+v", c.name, got, c.want)
		}
	}
}

// A binary built with -ldflags -X says the stamped version and commit.
func TestStampedBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary; runs without -short")
	}
	dir := t.TempDir()
	main := filepath.Join(dir, "main.go")
	if err := os.WriteFile(main, []byte("package main\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/corral-dev/corral/internal/buildinfo\"\n)\n\nfunc main() { fmt.Println(buildinfo.Self()) }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The program must sit in the module to import an internal package:
	// an overlay puts it there for this build only, where no other go
	// command sees it.
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(dir, "overlay.json")
	virtual := filepath.Join(here, "stampedmain", "main.go")
	if err := os.WriteFile(overlay, []byte(`{"Replace": {`+strconv.Quote(virtual)+`: `+strconv.Quote(main)+`}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "stamped")
	const p = "github.com/corral-dev/corral/internal/buildinfo."
	out, err := exec.Command("go", "build", "-overlay", overlay, "-o", bin, "-ldflags",
		"-X "+p+"version=v9.8.7 -X "+p+"commit=abcdef0123456789 -X "+p+"date=2026-12-02T19:00:00Z", "./stampedmain").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err = exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); !strings.HasPrefix(got, "corral v9.8.7 commit abcdef012345, go") {
		t.Fatalf("a stamped build says %q", got)
	}
}
