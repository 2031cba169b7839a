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
