package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/corral-dev/corral/internal/api"
)

// manyPanes is what the daemon answers for n panes of Claude Code.
func manyPanes(n int) []api.Pane {
	code := 3
	settings := `{"hooks":{"Notification":[{"hooks":[{"command":"'/usr/bin/corral' 'hook' '--agent' 'claude-code'","timeout":10,"type":"command"}]}]}}`
	panes := make([]api.Pane, n)
	for i := range panes {
		panes[i] = api.Pane{ID: fmt.Sprintf("p%04d", i), Name: fmt.Sprintf("agent-%d", i), Agent: "claude-code", State: "blocked", Kind: "permission",
			Message: "approve Bash: rm -rf build && echo <done> ünïcode", Since: "2026-12-02T20:00:00.000Z", Source: "osc7501",
			Command: []string{"/usr/bin/claude", "--settings", settings}, Records: []api.Record{}, Cwd: "/src/app"}
		if i%7 == 0 {
			panes[i].State, panes[i].ExitCode = "exited", &code
		}
	}
	return panes
}

// corral ls --json prints the daemon's answer indented: byte for byte what
// decoding it and encoding it again printed.
func TestLsJSONPrintsTheDaemonsAnswer(t *testing.T) {
	for _, panes := range [][]api.Pane{manyPanes(3), {}, nil} {
		var wire bytes.Buffer
		json.NewEncoder(&wire).Encode(panes) // as the daemon answers
		var decoded []api.Pane
		json.Unmarshal(wire.Bytes(), &decoded)
		var want, got bytes.Buffer
		printJSON(IO{Stdout: &want}, decoded)
		var raw json.RawMessage
		json.Unmarshal(wire.Bytes(), &raw)
		if err := printRawJSON(IO{Stdout: &got}, raw); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("raw:\n%s\ndecoded:\n%s", got.String(), want.String())
		}
	}
	if err := printRawJSON(IO{Stdout: &bytes.Buffer{}}, json.RawMessage(`[{"id":`)); err == nil {
		t.Fatal("a broken answer printed")
	}
}

// BenchmarkLsJSON: the CLI's side of corral ls --json at 1,000 panes,
// the answer passed through against decoded and encoded again.
func BenchmarkLsJSON(b *testing.B) {
	var wire bytes.Buffer
	json.NewEncoder(&wire).Encode(manyPanes(1000))
	b.Run("decode-encode", func(b *testing.B) {
		b.SetBytes(int64(wire.Len()))
		b.ReportAllocs()
		for b.Loop() {
			var panes []api.Pane
			json.Unmarshal(wire.Bytes(), &panes)
			printJSON(IO{Stdout: &bytes.Buffer{}}, panes)
		}
	})
	b.Run("raw", func(b *testing.B) {
		b.SetBytes(int64(wire.Len()))
		b.ReportAllocs()
		for b.Loop() {
			var raw json.RawMessage
			json.Unmarshal(wire.Bytes(), &raw)
			printRawJSON(IO{Stdout: &bytes.Buffer{}}, raw)
		}
	})
	b.Run("ls-columns", func(b *testing.B) {
		b.SetBytes(int64(wire.Len()))
		b.ReportAllocs()
		for b.Loop() {
			var rows []lsRow
			json.Unmarshal(wire.Bytes(), &rows)
		}
	})
	b.Run("ls-whole", func(b *testing.B) {
		b.SetBytes(int64(wire.Len()))
		b.ReportAllocs()
		for b.Loop() {
			var panes []api.Pane
			json.Unmarshal(wire.Bytes(), &panes)
		}
	})
}
