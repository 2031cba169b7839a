package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// Two terminals attach at once; keys pass through, output reaches both, a
// block rings their bell and runs the user's notification command, and
// the detach key leaves the pane running.
func TestAttachAndNotify(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	notified := filepath.Join(e.dir, "notified")
	os.MkdirAll(filepath.Join(e.dir, "config", "corral"), 0o700)
	cfg := fmt.Sprintf("[notify]\ndesktop = false\ncommand = [\"sh\", \"-c\", \"printf '%%s\\\\n' \\\"$1\\\" >> %s\", \"notify\"]\n", notified)
	os.WriteFile(filepath.Join(e.dir, "config", "corral", "config.toml"), []byte(cfg), 0o600)

	e.must("run", "--name", "fp", "--agent", "claude-code", "--", corralBin, "fake-agent", "--command", "make test")
	e.must("wait", "fp", "--state", "idle", "--timeout", "10s")
	type attached struct {
		cmd      *exec.Cmd
		in       *os.File
		out, err lockedBuffer
	}
	attach := func() *attached {
		a := &attached{cmd: exec.Command(corralBin, "attach", "fp")}
		a.cmd.Env, a.cmd.Dir = e.vars, e.dir
		r, w, _ := os.Pipe()
		a.cmd.Stdin, a.in = r, w
		a.cmd.Stdout, a.cmd.Stderr = &a.out, &a.err
		if err := a.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		return a
	}
	one, two := attach(), attach()
	for _, a := range []*attached{one, two} { // both see the screen before any key
		if !proctest.WaitFor(10*time.Second, func() bool { return strings.Contains(a.out.String(), "? for shortcuts") }) {
			t.Fatalf("attach showed %q", a.out.String())
		}
	}
	one.in.WriteString("ask\r")
	e.must("wait", "fp", "--state", "blocked", "--timeout", "10s")
	one.in.WriteString("1")
	e.must("wait", "fp", "--state", "done,idle", "--timeout", "10s")
	for _, a := range []*attached{one, two} {
		a.in.WriteString("\x1c")
		done := make(chan error, 1)
		go func() { done <- a.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("attach: %v: %s", err, a.err.String())
			}
		case <-time.After(10 * time.Second):
			a.cmd.Process.Kill()
			t.Fatal("attach did not detach")
		}
		out := a.out.String()
		if !strings.Contains(out, "proceed?") || !strings.Contains(out, "\a\x1b]9;fp · claude-code · Do you want to proceed?") {
			t.Fatalf("attached terminal saw %q", out)
		}
		if !strings.Contains(a.err.String(), "[detached from fp]") {
			t.Fatalf("stderr %q", a.err.String())
		}
	}
	if p := e.pane("fp"); p.State == "exited" {
		t.Fatal("detaching ended the pane")
	}
	var b []byte
	if !proctest.WaitFor(10*time.Second, func() bool {
		b, _ = os.ReadFile(notified)
		return strings.TrimSpace(string(b)) == "fp · claude-code · Do you want to proceed?"
	}) {
		t.Fatalf("notification command wrote %q", b)
	}
}
