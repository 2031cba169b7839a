package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/lab/mockmodel"
	"github.com/corral-dev/corral/internal/proctest"
)

// TestRealGeminiCLI runs the real Gemini CLI in a pane against a scripted
// Gemini API server on loopback: corral adds its hooks for the run (a
// settings file through GEMINI_CLI_SYSTEM_DEFAULTS_PATH), and they report
// the turn. Opt-in: runs when a `gemini` binary is found ($CORRAL_GEMINI,
// or on PATH), skipped otherwise.
func TestRealGeminiCLI(t *testing.T) {
	t.Parallel()
	gemini := realCLI(t, "CORRAL_GEMINI", "gemini", "@google/gemini-cli")
	model, err := mockmodel.StartGemini("ls -la")
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	// Gemini CLI refuses a settings file under a folder others can write
	// (/tmp): corral's state folder and the agent's home go in a private one.
	// Its cleanup is registered first so that it runs last, after the
	// daemon and Gemini CLI have ended.
	home, _ := os.UserHomeDir()
	private, err := os.MkdirTemp(home, ".corral-gemini-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(private) })
	os.Chmod(private, 0o700)
	e := newEnv(t)
	agentHome, work := filepath.Join(private, "home"), filepath.Join(private, "work")
	os.MkdirAll(filepath.Join(agentHome, ".gemini"), 0o700)
	os.MkdirAll(work, 0o700)
	os.WriteFile(filepath.Join(agentHome, ".gemini", "settings.json"),
		[]byte(`{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}}}`), 0o600)
	for i, v := range e.vars {
		if strings.HasPrefix(v, "CORRAL_STATE_DIR=") {
			e.vars[i] = "CORRAL_STATE_DIR=" + filepath.Join(private, "state")
		}
	}
	e.must("run", "--name", "gm", "--cwd", work, "--env", "HOME="+agentHome, "--env", "GEMINI_API_KEY=test-key",
		"--env", "GOOGLE_GEMINI_BASE_URL="+model.URL, "--", gemini)
	if !proctest.WaitFor(60*time.Second, func() bool { return strings.Contains(e.screen("gm"), "Type your message") }) {
		t.Fatalf("Gemini CLI never showed its input box:\n%s", e.must("screen", "gm"))
	}
	stopWatch := watchSources(func() (string, bool) {
		out, _, code := e.run("ls", "--json")
		return out, code == 0
	}, "gm")
	t.Cleanup(func() { stopWatch() }) // before the daemon's shutdown: ls would start another
	e.must("send", "gm", "please list the files", "--enter")
	// Gemini CLI drops an Enter that arrives while it is still starting up:
	// press it again until the turn starts.
	for i := 0; ; i++ {
		if _, _, code := e.run("wait", "gm", "--state", "working,done", "--timeout", "3s"); code == 0 {
			break
		}
		if i == 10 {
			t.Fatalf("the prompt was never submitted:\n%s", e.must("screen", "gm"))
		}
		e.must("send", "gm", "", "--enter", "--force")
	}
	if _, errs, code := e.run("wait", "gm", "--state", "done", "--timeout", "60s"); code != 0 {
		t.Fatalf("turn never ended (%s):\n%s", errs, e.must("screen", "gm"))
	}
	seen := stopWatch()
	events := e.must("events", "--since", "1h")
	if !reportedByHooks(events, `"name":"gm"`, seen) {
		t.Fatalf("the turn was not reported through Gemini CLI's hooks (ls --json through the turn: %v):\n%s", seen, events)
	}
}

// watchSources polls ls (the output of corral ls --json) until stop is
// called, and returns from stop every state/source pane name was read in.
// A task typed into a waiting agent reads working (kind submitted) until
// the agent shows it, and its own working report then changes the pane's
// source without an event: only a read of the pane sees it.
func watchSources(ls func() (string, bool), name string) (stop func() map[string]bool) {
	var mu sync.Mutex
	seen := map[string]bool{}
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			out, ok := ls()
			if !ok {
				continue
			}
			var ps []struct{ Name, State, Source string }
			json.Unmarshal([]byte(out), &ps)
			mu.Lock()
			for _, p := range ps {
				if p.Name == name {
					seen[p.State+"/"+p.Source] = true
				}
			}
			mu.Unlock()
		}
	}()
	var once sync.Once
	return func() map[string]bool {
		once.Do(func() { close(done) })
		<-ended
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(seen)
	}
}

// reportedByHooks reports whether a turn of the pane that pane (`"name":"…"`)
// names was reported through its hooks: its end in an event from a hook,
// its work read from a hook (an event, or a read through the turn).
func reportedByHooks(events, pane string, seen map[string]bool) bool {
	var working, done bool
	for _, line := range strings.Split(events, "\n") {
		if !strings.Contains(line, pane) || !strings.Contains(line, `"source":"hook"`) {
			continue
		}
		working = working || strings.Contains(line, `"state":"working"`)
		done = done || strings.Contains(line, `"state":"done"`)
	}
	return done && (working || seen["working/hook"])
}
