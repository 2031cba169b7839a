package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/doctor"
	"github.com/corral-dev/corral/internal/proctest"
)

// runDoctorCmd runs corral doctor as a user would.
func runDoctorCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return run(t, "", append([]string{"doctor"}, args...)...)
}

// doctorHome makes a private HOME, state, config and socket with no
// daemon, and a PATH holding only bin's scripts.
func doctorHome(t *testing.T, bin map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("CORRAL_STATE_DIR", "")
	t.Setenv("GEMINI_CLI_HOME", "")
	t.Setenv("CORRAL_SOCKET", filepath.Join(dir, "no-daemon.sock"))
	binDir := filepath.Join(dir, "bin")
	if err := os.MkdirAll(binDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, script := range bin {
		if err := proctest.WriteExecutable(filepath.Join(binDir, name), []byte(script), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", binDir)
	return dir
}

// doctor --json with no daemon: the daemon is reported not running, with
// a fix; an agent whose --version never ends costs its timeout, not a
// hang; exit 0, since nothing failed.
func TestDoctorNoDaemon(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	doctorHome(t, map[string]string{
		"claude": "#!/bin/sh\necho '2.1.332 (Claude Code)'\n",
		"codex":  "#!/bin/sh\nexec " + sleep + " 60\n",
	})
	type result struct {
		out, errs string
		code      int
	}
	// The hung --version costs its timeout: a shorter one here.
	defer func(d time.Duration) { doctor.CommandTimeout = d }(doctor.CommandTimeout)
	doctor.CommandTimeout = 2 * time.Second
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		out, errs, code := runDoctorCmd(t, "--json")
		done <- result{out, errs, code}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("corral doctor --json did not finish within 30 s")
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("corral doctor took %v", d)
	}
	if r.code != 0 {
		t.Fatalf("exit %d: %s\n%s", r.code, r.errs, r.out)
	}
	var report struct {
		Checks []struct{ Name, Status, Found, Fix string }
		OK     *bool
	}
	if err := json.Unmarshal([]byte(r.out), &report); err != nil || report.OK == nil || !*report.OK {
		t.Fatalf("%v: %s", err, r.out)
	}
	byName := map[string]struct{ Name, Status, Found, Fix string }{}
	for _, c := range report.Checks {
		byName[c.Name] = c
	}
	d := byName["daemon"]
	if d.Status != "warn" || !strings.Contains(d.Found, "not running") || !strings.Contains(d.Found, "no-daemon.sock") || !strings.Contains(d.Fix, "corral serve") {
		t.Errorf("daemon: %+v", d)
	}
	if c := byName["claude-code"]; c.Status != "ok" || !strings.Contains(c.Found, "2.1.332") {
		t.Errorf("claude-code: %+v", c)
	}
	if c := byName["codex"]; c.Status != "warn" || !strings.Contains(c.Found, "no answer within") || c.Fix == "" {
		t.Errorf("codex: %+v", c)
	}
	for _, name := range []string{"system", "terminal", "state folder", "socket folder", "config file", "tmux", "notify desktop", "fleet"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("no %q check in %s", name, r.out)
		}
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("HOME"), "no-daemon.sock")); err == nil {
		t.Error("doctor started a daemon")
	}
}

// What doctor prints from outside goes through the terminal-safe writer:
// an agent's --version output with an escape sequence in it is printed
// escaped. A failed check exits 1.
func TestDoctorTextIsSafeAndFailsExit1(t *testing.T) {
	home := doctorHome(t, map[string]string{
		"claude": "#!/bin/sh\nprintf '\\033]52;c;cHduZWQ=\\007 \\302\\233 oops\\n'\nexit 1\n",
	})
	out, errs, code := runDoctorCmd(t)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	if strings.ContainsAny(out, "\x1b\x07\u009b") {
		t.Fatalf("a control character reached the terminal:\n%q", out)
	}
	if !strings.Contains(out, `\x1b]52;c;cHduZWQ=\x07 \u009b oops`) || !strings.Contains(out, "warn  claude-code") {
		t.Fatalf("the agent's output is not shown escaped:\n%s", out)
	}
	if !strings.Contains(out, "warn  daemon ") || !strings.Contains(out, "fix: nothing to do if you have not used corral yet") {
		t.Fatalf("no daemon line with its fix:\n%s", out)
	}

	config := filepath.Join(home, "config", "corral", "config.toml")
	if err := os.MkdirAll(filepath.Dir(config), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte("[notify]\nbogus = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code = runDoctorCmd(t)
	if code != 1 || !strings.Contains(out, "fail  config file") || !strings.Contains(out, "bogus") || !strings.Contains(out, "fix the failures first") {
		t.Fatalf("broken config: exit %d\n%s", code, out)
	}
	if _, _, code := runDoctorCmd(t, "extra"); code != 2 {
		t.Errorf("an argument: exit %d; want 2", code)
	}
}
