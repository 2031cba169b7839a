package main

import (
	"debug/buildinfo"
	"testing"
)

// The binary links no Markdown renderer: corral writes its man pages
// itself (internal/cli/docs.go). cobra/doc's go-md2man and blackfriday
// cost ~210 KB of initialisers' heap in every process, each holder's
// included.
func TestBinaryLinksNoMarkdownRenderer(t *testing.T) {
	t.Parallel()
	info, err := buildinfo.ReadFile(corralBin)
	if err != nil {
		t.Fatalf("read the build info of %s: %v", corralBin, err)
	}
	if len(info.Deps) < 10 {
		t.Fatalf("the build info of %s names %d modules: is it stripped?", corralBin, len(info.Deps))
	}
	for _, m := range info.Deps {
		switch m.Path {
		case "github.com/russross/blackfriday/v2", "github.com/cpuguy83/go-md2man/v2", "go.yaml.in/yaml/v3":
			t.Errorf("%s links %s %s (cobra/doc imported again?)", corralBin, m.Path, m.Version)
		}
	}
}

// What the cuts of the initialisers' heap took out stays out: cobra/doc's
// Markdown renderer (~240 KB with blackfriday and yaml) and the fleet's
// regular expressions (~60 KB, now compiled on first use). At the cut:
// 441 KB in all, 22 KB corral's own, 0.1 KB internal/fleet.
func TestHolderInitHeapAfterCuts(t *testing.T) {
	t.Parallel()
	pkgs := initBytes(t, "hold")
	all := 0
	for _, n := range pkgs {
		all += n
	}
	if _, ok := pkgs["github.com/corral-dev/corral/internal/cli"]; !ok || len(pkgs) < 20 {
		t.Fatalf("inittrace gave %d packages, internal/cli not among them: has its format changed?", len(pkgs))
	}
	for _, c := range []struct {
		pkg string
		max int
	}{
		{"github.com/corral-dev/corral/internal/fleet", 4 << 10},
		{"github.com/russross/blackfriday/v2", 0},
		{"go.yaml.in/yaml/v3", 0},
	} {
		if n := pkgs[c.pkg]; n > c.max {
			t.Errorf("%s allocates %d bytes at init, more than %d", c.pkg, n, c.max)
		}
	}
	const capAll = 560 << 10
	if all > capAll {
		t.Errorf("package initialisers allocate %d KB before a holder's main, more than %d KB; the largest: %s", all>>10, capAll>>10, largest(pkgs, 5))
	}
}
