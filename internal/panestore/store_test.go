package panestore

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

func TestResumeArgv(t *testing.T) {
	s := func(agent, id string) []Session { return []Session{{Agent: agent, ID: id}} }
	for _, tc := range []struct {
		name     string
		argv     []string
		sessions []Session
		want     []string
		session  string
		why      string
	}{
		{"claude", []string{"claude", "--model", "m"}, s("claude-code", "abc"), []string{"claude", "--resume", "abc", "--model", "m"}, "abc", ""},
		{"claude via npx", []string{"npx", "@anthropic-ai/claude-code"}, s("claude-code", "abc"), []string{"npx", "@anthropic-ai/claude-code", "--resume", "abc"}, "abc", ""},
		{"newest session", []string{"claude"}, []Session{{Agent: "claude-code", ID: "old"}, {Agent: "claude-code", ID: "new"}}, []string{"claude", "--resume", "new"}, "new", ""},
		{"codex", []string{"codex", "--model", "o"}, s("codex", "th"), []string{"codex", "resume", "th", "--model", "o"}, "th", ""},
		{"codex subcommand", []string{"codex", "exec", "x"}, s("codex", "th"), []string{"codex", "exec", "x"}, "", "subcommand"},
		{"gemini", []string{"gemini"}, s("gemini", "g1"), []string{"gemini", "--resume", "g1"}, "g1", ""},
		{"already resuming", []string{"claude", "--continue"}, s("claude-code", "abc"), []string{"claude", "--continue"}, "", "already names"},
		{"gemini already resuming", []string{"gemini", "--session-id=s"}, s("gemini", "g1"), []string{"gemini", "--session-id=s"}, "", "already names"},
		{"codex names no conversation by flag", []string{"codex", "-c", "x=1"}, s("codex", "th"), []string{"codex", "resume", "th", "-c", "x=1"}, "th", ""},
		{"no session", []string{"claude"}, nil, []string{"claude"}, "", "no claude-code conversation id"},
		{"another agent's session", []string{"claude"}, s("gemini", "g1"), []string{"claude"}, "", "no claude-code conversation id"},
		{"a shell", []string{"bash"}, s("claude-code", "abc"), []string{"bash"}, "", "starts fresh"},
	} {
		argv, session, why := ResumeArgv(Row{Argv: tc.argv, Sessions: tc.sessions})
		if !reflect.DeepEqual(argv, tc.want) || session != tc.session || !strings.Contains(why, tc.why) || (tc.why == "") != (why == "") {
			t.Errorf("%s: %q %q %q, want %q %q …%q…", tc.name, argv, session, why, tc.want, tc.session, tc.why)
		}
	}
}

// The pane table is written whole and read back; one that is not a table
// is set aside with a message, never half-read.
func TestPaneTableFile(t *testing.T) {
	dir := t.TempDir()
	var logged []string
	tb := New(dir, func(f string, a ...any) { logged = append(logged, f) }, nil)
	if f := tb.load(); len(f.Panes) != 0 {
		t.Fatalf("a missing table: %+v", f)
	}
	if err := tb.write(File{Panes: []Row{{ID: "a1", Name: "x", Argv: []string{"sh"}}}}); err != nil {
		t.Fatal(err)
	}
	if f := tb.load(); len(f.Panes) != 1 || f.Panes[0].ID != "a1" {
		t.Fatalf("read back: %+v", f)
	}
	// A change is a journal line; the same rows again write nothing; the
	// next daemon reads the table and the journal over it.
	if err := tb.sync(File{Panes: []Row{{ID: "a1", Name: "x", Argv: []string{"sh"}}, {ID: "b2", Argv: []string{"vi"}}}}, nil); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(dir, journalName)
	before, _ := os.ReadFile(journal)
	if n := strings.Count(string(before), "\n"); n != 1 {
		t.Fatalf("one new row, %d journal lines: %s", n, before)
	}
	tb.sync(File{Panes: []Row{{ID: "a1", Name: "x", Argv: []string{"sh"}}, {ID: "b2", Argv: []string{"vi"}}}}, nil)
	if after, _ := os.ReadFile(journal); len(after) != len(before) {
		t.Fatalf("the same rows wrote again: %s", after)
	}
	tb.sync(File{Lost: []Row{{ID: "b2", Argv: []string{"vi"}, Why: "gone"}}}, map[string]bool{"b2": true, "a1": true})
	// A crash tore the last line.
	jf, _ := os.OpenFile(journal, os.O_WRONLY|os.O_APPEND, 0o600)
	jf.WriteString(`{"op":"del","id":"b`)
	jf.Close()
	next := New(dir, func(string, ...any) {}, nil)
	if f := next.load(); len(f.Panes) != 0 || len(f.Lost) != 1 || f.Lost[0].Why != "gone" {
		t.Fatalf("table and journal read back: %+v", f)
	}
	if next.unread {
		t.Fatal("a torn journal line made the table unread")
	}
	for _, bad := range []string{"{not json", `{"version": 99, "panes": []}`} {
		os.WriteFile(filepath.Join(dir, tableName), []byte(bad), 0o600)
		logged = nil
		if f := tb.load(); len(f.Panes) != 0 || len(logged) != 1 {
			t.Fatalf("table %q: %+v, logged %q", bad, f, logged)
		}
		if _, err := os.Stat(filepath.Join(dir, tableName+".bad")); err != nil {
			t.Fatalf("table %q not set aside: %v", bad, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".panes.json-") {
			t.Fatalf("a temporary file left: %s", e.Name())
		}
	}
}

// A lost pane's program counts as running while a process of its pid
// carries the pane's mark or is its holder's child (its environment may
// have been cleared), and not once it has exited.
func TestProgramRuns(t *testing.T) {
	start := func(env ...string) *exec.Cmd {
		cmd := exec.Command("sleep", "1051")
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	marked := start("CORRAL_PANE=p1")
	bare := start()
	self := os.Getpid()
	for _, tc := range []struct {
		row  Row
		want bool
	}{
		{Row{ID: "p1", PID: marked.Process.Pid}, true},
		{Row{ID: "p2", PID: marked.Process.Pid}, false},                 // another pane's mark, not our holder's child
		{Row{ID: "p2", PID: bare.Process.Pid, Holder: self}, true},      // the holder's child
		{Row{ID: "p2", PID: bare.Process.Pid, Holder: self + 1}, false}, // not its holder's
		{Row{ID: "p1"}, false},
	} {
		if got := ProgramRuns(tc.row); got != tc.want {
			t.Errorf("ProgramRuns(%+v) = %v", tc.row, got)
		}
	}
	bare.Process.Kill()
	// A zombie is not running.
	if !proctest.WaitFor(5*time.Second, func() bool { return !ProgramRuns(Row{ID: "p2", PID: bare.Process.Pid, Holder: self}) }) {
		t.Fatal("an exited program counts as running")
	}
}
