package tomlfile

import (
	"fmt"
	"strings"
	"testing"
)

type conf struct {
	Name  string `toml:"name"`
	Panes struct {
		Prune string `toml:"prune_after"`
	} `toml:"panes"`
}

func TestStrictAndDecode(t *testing.T) {
	tests := []struct {
		name, data string
		problems   []string // "line:col msg"
		decodeErr  string
	}{
		{"good", "name = \"x\"\n[panes]\nprune_after = \"1h\"\n", nil, ""},
		{"unknown keys, each located", "name = \"x\"\nnmae = 1\n[panes]\nprune = 2\n",
			[]string{`2:1 unknown key "nmae"`, `4:1 unknown key "panes.prune"`}, "config c.toml:2:1: unknown key [nmae] (a hint)"},
		{"syntax", "name = \n", []string{"1:8 "}, "config c.toml:1:8: toml: "},
		{"type", "name = 3\n", []string{"1:8 "}, "config c.toml:1:8: toml: "},
	}
	for _, tt := range tests {
		var c conf
		ps := Strict([]byte(tt.data), &c)
		if len(ps) != len(tt.problems) {
			t.Errorf("%s: %d problems %+v, want %v", tt.name, len(ps), ps, tt.problems)
			continue
		}
		for i, p := range ps {
			got := strings.TrimSpace(strings.Join([]string{fmt.Sprintf("%d:%d", p.Line, p.Column), p.Msg}, " "))
			if !strings.HasPrefix(got, strings.TrimSpace(tt.problems[i])) || p.Snippet == "" {
				t.Errorf("%s: problem %q (snippet %q), want %q", tt.name, got, p.Snippet, tt.problems[i])
			}
		}
		err := Decode("config", "c.toml", []byte(tt.data), &conf{}, "a hint")
		if (err == nil) != (tt.decodeErr == "") || err != nil && !strings.HasPrefix(err.Error(), tt.decodeErr) {
			t.Errorf("%s: Decode: %v, want %q", tt.name, err, tt.decodeErr)
		}
	}
}
