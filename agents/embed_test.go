package agentsdata

import (
	"bytes"
	"io"
	"io/fs"
	"testing"
)

// The view shows each folder's rules.toml as NAME.toml, and nothing else.
func TestRulesView(t *testing.T) {
	entries, err := Rules.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		want, _ := FS.ReadFile(e.Name()[:len(e.Name())-len(".toml")] + "/rules.toml")
		got, err := Rules.ReadFile(e.Name())
		if err != nil || len(want) == 0 || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, %v; its folder's rules.toml has %d", e.Name(), len(got), err, len(want))
		}
		f, err := Rules.Open(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		info, _ := f.Stat()
		opened, _ := io.ReadAll(f)
		f.Close()
		if info.Name() != e.Name() || !bytes.Equal(opened, want) || e.IsDir() {
			t.Errorf("open %s: named %s, %d bytes", e.Name(), info.Name(), len(opened))
		}
	}
	if len(names) < 8 || names[0] != "claude-code.toml" {
		t.Errorf("names %v", names)
	}
	for _, name := range []string{"crush/rules.toml", "crush/agent.toml", "crush", "nothing.toml", "../crush.toml", ".toml", "crush.toml/x"} {
		if _, err := Rules.ReadFile(name); err == nil {
			t.Errorf("read %s: no error", name)
		}
		if _, err := Rules.Open(name); err == nil {
			t.Errorf("open %s: no error", name)
		}
	}
	if _, err := fs.ReadDir(Rules, "crush"); err == nil {
		t.Error("a folder inside the view")
	}
}
