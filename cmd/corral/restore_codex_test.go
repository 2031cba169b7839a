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

// Codex 0.171.0 notifies the end of its hidden title-generation thread
// (testdata/hooks/codex-title-thread.json, recorded live) about 0.2 s
// after the first prompt, under a thread id of its own that has no saved
// session. A machine that restarts before the first real turn ends (the
// agent blocked on its first permission prompt, say) must not be restored
// with `codex resume TITLE-THREAD`: Codex exits 1 with "No saved session
// found with ID …" and the pane is lost.
func TestRestoreIgnoresCodexTitleThread(t *testing.T) {
	t.Parallel()
	payload, err := os.ReadFile("../../testdata/hooks/codex-title-thread.json")
	if err != nil {
		t.Fatal(err)
	}
	var title struct {
		Thread string `json:"thread-id"`
	}
	if err := json.Unmarshal(payload, &title); err != nil || title.Thread == "" {
		t.Fatalf("testdata: %v", err)
	}
	e := newEnv(t)
	bin := filepath.Join(e.dir, "bin")
	os.MkdirAll(bin, 0o755)
	argsLog := filepath.Join(e.dir, "args.log")
	// A fake codex: it logs its command line, notifies the title thread
	// through corral's hook as the real one does, and waits (its first
	// turn never ends).
	hook := filepath.Join(e.dir, "title.json")
	os.WriteFile(hook, payload, 0o644)
	script := fmt.Sprintf("#!/bin/sh\necho \"codex $*\" >> %s\n%s hook --agent codex < %s\necho codex-started\nexec sleep 1019\n",
		argsLog, corralBin, hook)
	if err := proctest.WriteExecutable(filepath.Join(bin, "codex"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e.vars = append(e.vars, "PATH="+bin+":"+os.Getenv("PATH"))
	e.must("run", "--name", "cx", "--", "codex")
	waitFor(t, 10*time.Second, "codex started", func() bool { return strings.Contains(e.screen("cx"), "codex-started") })
	// The hook has been heard once the daemon counted it.
	waitFor(t, 5*time.Second, "the hook report", func() bool {
		var ps []struct {
			HooksIgnored int `json:"hooks_ignored"`
		}
		e.lookOrRun("/v1/panes", &ps, "ls", "--json")
		return len(ps) == 1 && ps[0].HooksIgnored > 0
	})
	e.reboot(t, "1019")
	var res []struct{ Resumed, Note, Error string }
	out := e.must("restore", "--json")
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 1 {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	if res[0].Resumed != "" || res[0].Error != "" {
		t.Errorf("restore resumed %q, the title thread (%s); want a fresh start: %+v", res[0].Resumed, title.Thread, res[0])
	}
	waitFor(t, 10*time.Second, "codex restarted", func() bool { return strings.Contains(e.screen("cx"), "codex-started") })
	b, _ := os.ReadFile(argsLog)
	if strings.Contains(string(b), "resume") {
		t.Errorf("codex's command lines:\n%s", b)
	}
	e.must("shutdown")
	noneLeft(t, "shutdown after restore", "1019")
}
