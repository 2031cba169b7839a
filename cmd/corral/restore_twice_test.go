package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// A pane restored once must be restorable again with the newest
// conversation corral saw. Live (Claude Code 2.1.332, Codex 0.171.0), the
// second restore ran the first restore's command line again, `--resume OLD`
// (`codex resume OLD`), and printed "fresh: its command already names a
// conversation" (Codex: "no codex conversation id was seen … it starts
// fresh") while it resumed the old one: a conversation started since
// (/clear, /new) is never resumed.
func TestRestoreTwiceResumesTheNewest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bin := filepath.Join(e.dir, "bin")
	os.MkdirAll(bin, 0o755)
	argsLog := filepath.Join(e.dir, "args.log")
	// A fake claude: each start logs its command line and reports a new
	// conversation, sess-N for its Nth start, through corral's hook.
	script := fmt.Sprintf(`#!/bin/sh
echo "claude $*" >> %[1]s
n=$(wc -l < %[1]s | tr -d ' ')
echo "{\"hook_event_name\":\"SessionStart\",\"source\":\"startup\",\"session_id\":\"sess-$n\"}" | %[2]s hook --agent claude-code
echo claude-started-$n
exec sleep 1021
`, argsLog, corralBin)
	if err := proctest.WriteExecutable(filepath.Join(bin, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e.vars = append(e.vars, "PATH="+bin+":"+os.Getenv("PATH"))
	e.must("run", "--name", "cc", "--", "claude", "--model", "m1")
	state := filepath.Join(e.dir, "state")
	reboot := func(n int) []struct{ Resumed, Note, Error string } {
		t.Helper()
		waitFor(t, 10*time.Second, "claude started", func() bool {
			return strings.Contains(e.screen("cc"), fmt.Sprintf("claude-started-%d", n))
		})
		waitFor(t, 5*time.Second, "the session in the pane table", func() bool {
			return strings.Contains(tableText(state), fmt.Sprintf(`"sess-%d"`, n))
		})
		e.reboot(t, "1021")
		var res []struct{ Resumed, Note, Error string }
		out := e.must("restore", "--json")
		if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 1 {
			t.Fatalf("restore: %v\n%s", err, out)
		}
		return res
	}
	if r := reboot(1); r[0].Resumed != "sess-1" {
		t.Fatalf("first restore: %+v", r[0])
	}
	if r := reboot(2); r[0].Resumed != "sess-2" {
		t.Errorf("second restore: %+v; want sess-2 resumed, the conversation the restored agent reported", r[0])
	}
	waitFor(t, 10*time.Second, "claude restarted", func() bool { return strings.Contains(e.screen("cc"), "claude-started-3") })
	b, _ := os.ReadFile(argsLog)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], "--resume sess-2") || strings.Count(lines[2], "--resume") != 1 {
		for i, l := range lines {
			if j := strings.LastIndex(l, "}} "); j >= 0 {
				lines[i] = "claude --settings … " + l[j+3:] // the hooks' JSON
			}
		}
		t.Errorf("claude's command lines:\n%s", strings.Join(lines, "\n"))
	}
	e.must("shutdown")
	noneLeft(t, "shutdown after restore", "1021")
}
