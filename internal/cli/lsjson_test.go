package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"text/tabwriter"

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
		// As decoded into a RawMessage, and as the bytes came (the
		// encoder's newline at the end).
		for _, in := range []json.RawMessage{raw, wire.Bytes()} {
			got.Reset()
			if err := printRawJSON(IO{Stdout: &got}, in); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Fatalf("raw:\n%s\ndecoded:\n%s", got.String(), want.String())
			}
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

// countingWriter counts the writes it is given.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// corral ls prints its table in a few large writes, each a system call
// on a pipe, and prints what a tabwriter straight on stdout printed.
func TestLsWritesInFewWrites(t *testing.T) {
	for _, n := range []int{0, 3, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rows := lsRows(t, n)
			rows = append(rows, lsRow{ID: "p9999", Agent: "codex", State: "idle", IntegrationError: "hooks.json is not writable"})
			var want bytes.Buffer
			tw := tabwriter.NewWriter(&want, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tAGENT\tSTATE\tFOR\tSOURCE\tMESSAGE")
			for _, p := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, dash(p.Name), p.Agent, paneState(api.Pane{State: p.State, Kind: p.Kind, ExitCode: p.ExitCode}), age(p.Since), p.Source, p.Message)
			}
			tw.Flush()
			want.WriteString("p9999: no hooks: hooks.json is not writable\n")
			var got countingWriter
			if err := printLs(&got, rows); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Fatalf("printed:\n%s\nwant:\n%s", got.String(), want.String())
			}
			if max := want.Len()/(64<<10) + 1; got.writes > max {
				t.Fatalf("%d writes for %d bytes, want at most %d", got.writes, want.Len(), max)
			}
		})
	}
}

// lsRows is what corral ls decodes of n panes, their age left unknown (a
// second passing between two prints would change it).
func lsRows(t testing.TB, n int) []lsRow {
	var wire bytes.Buffer
	json.NewEncoder(&wire).Encode(manyPanes(n))
	var rows []lsRow
	if err := json.Unmarshal(wire.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		rows[i].Since = ""
	}
	return rows
}

// BenchmarkLs: the CLI's side of corral ls at 1,000 panes, from the
// daemon's bytes to the table written to a file (a system call a write,
// as on a pipe).
func BenchmarkLs(b *testing.B) {
	var wire bytes.Buffer
	json.NewEncoder(&wire).Encode(manyPanes(1000))
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer null.Close()
	b.Run("ls", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var rows []lsRow
			if err := json.NewDecoder(bytes.NewReader(wire.Bytes())).Decode(&rows); err != nil {
				b.Fatal(err)
			}
			if err := printLs(null, rows); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ls-unbuffered", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var rows []lsRow
			if err := json.NewDecoder(bytes.NewReader(wire.Bytes())).Decode(&rows); err != nil {
				b.Fatal(err)
			}
			tw := tabwriter.NewWriter(null, 0, 4, 2, ' ', 0)
			for _, p := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, dash(p.Name), p.Agent, paneState(api.Pane{State: p.State, Kind: p.Kind, ExitCode: p.ExitCode}), age(p.Since), p.Source, p.Message)
			}
			tw.Flush()
		}
	})
	b.Run("ls-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := printRawJSON(IO{Stdout: null}, wire.Bytes()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
