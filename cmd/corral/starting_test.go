package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// fakeClaude puts corral's fake agent on PATH-less disk under the name
// claude, which corral knows by its command as Claude Code.
func fakeClaude(t *testing.T, e *env) string {
	t.Helper()
	bin := filepath.Join(e.dir, "bin")
	os.MkdirAll(bin, 0o755)
	path := filepath.Join(bin, "claude")
	proctest.WriteExecutable(path, []byte("#!/bin/sh\nexec "+corralBin+" fake-agent \"$@\"\n"), 0o755)
	return path
}

// A fresh agent reads working, kind starting, until it takes input:
// `run && wait --state idle && send --enter` starts its turn, and so does a
// send typed at once (it waits for the agent); starting never ends in done.
// The agent drops what is typed before its input box is up, as Claude Code
// and Qwen Code do.
func TestStartingAgentTakesItsFirstTask(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	claude := fakeClaude(t, e)
	const startup = 1500 * time.Millisecond

	e.must("run", "--name", "waited", "--", claude, "--startup", startup.String())
	began := time.Now()
	if p := e.pane("waited"); p.State != "working" || p.Kind != "starting" || p.Agent != "claude-code" {
		t.Fatalf("a fresh Claude Code pane: %+v", p)
	}
	// The other start at the same time: a send typed at once.
	e.must("run", "--name", "at-once", "--", claude, "--startup", startup.String())
	sent := make(chan string, 1)
	go func() {
		_, errs, code := e.run("send", "at-once", "ask", "--enter")
		if code != 0 {
			errs = fmt.Sprintf("exit %d: %s", code, errs)
		} else {
			errs = ""
		}
		sent <- errs
	}()
	e.must("wait", "waited", "--state", "idle", "--timeout", "20s")
	if waited := time.Since(began); waited < startup-200*time.Millisecond {
		t.Fatalf("wait --state idle returned %v after run, before the agent drew its input box (%v)", waited, startup)
	}
	e.must("send", "waited", "ask", "--enter")
	e.must("wait", "waited", "--state", "blocked", "--timeout", "20s") // its turn asks for permission
	if errs := <-sent; errs != "" {
		t.Fatalf("corral send at-once ask --enter, typed at once: %s", errs)
	}
	e.must("wait", "at-once", "--state", "blocked", "--timeout", "20s")

	for _, ev := range e.events() {
		if ev.State == "done" {
			t.Fatalf("a start read as a finished turn: %+v", e.events())
		}
	}

	// A send that cannot wait long enough says so (exit 124) and types
	// nothing.
	e.must("run", "--name", "slow", "--", claude, "--startup", "10s")
	if _, errs, code := e.run("send", "slow", "x", "--enter", "--timeout", "300ms"); code != 124 || !strings.Contains(errs, "still starting") {
		t.Fatalf("send to a starting agent past --timeout: exit %d %q", code, errs)
	}
}

// An Enter the agent did not take (the text still in its input box) is
// pressed again, up to four in all; one that is never taken is reported
// (exit 3), never lost silently.
func TestSendEnterNotTaken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	claude := fakeClaude(t, e)
	// The cases, a pane each in the one daemon, at once: each send waits
	// longer before each Enter again (about 5 s in all for one never taken).
	run, wait := atOnce(t)
	defer wait()
	for _, c := range []struct {
		name  string
		drops string // Enters the agent drops in a row
		taken bool
	}{
		{"once", "1", true},
		{"thrice", "3", true}, // opencode under load dropped two
		{"never", "5", false},
	} {
		run(c.name, func(t *testing.T) {
			if c.drops != "1" {
				proctest.Slow(t, "Enters again, each after a longer wait, about 6 s")
			}
			e := &env{t: t, dir: e.dir, vars: e.vars}
			e.must("run", "--name", c.name, "--", claude, "--drop-enter", c.drops)
			e.must("wait", c.name, "--state", "idle", "--timeout", "20s")
			if !c.taken {
				if _, errs, code := e.run("send", c.name, "ask", "--enter"); code != 3 || !strings.Contains(errs, "did not take it") {
					t.Fatalf("an Enter never taken: exit %d %q", code, errs)
				}
				return
			}
			e.must("send", c.name, "ask", "--enter")
			e.must("wait", c.name, "--state", "blocked", "--timeout", "20s")
		})
	}
}
