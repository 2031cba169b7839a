package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A job runs with the environment and in the folder of the corral exec
// that started it, as the command would run there, not with the daemon's
// (a pipeline sets OPENAI_BASE_URL or PATH before corral exec); --env adds
// to it.
func TestExecUsesTheCallersEnvironment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.vars = append(e.vars, "CORRAL_TEST_WHO=daemon", "CORRAL_TEST_DAEMON_ONLY=daemon")
	e.must("ls") // the daemon starts with this environment
	work := filepath.Join(e.dir, "work")
	os.MkdirAll(work, 0o700)
	var vars []string
	for _, v := range e.vars {
		if !strings.HasPrefix(v, "CORRAL_TEST_") {
			vars = append(vars, v)
		}
	}
	cmd := exec.Command(corralBin, "exec", "--name", "env", "--agent", "claude", "--env", "CORRAL_TEST_ADDED=flag", "--", "sh", "-c",
		`echo '`+initJSON+`'; printf '{"type":"assistant","message":{"content":[{"type":"text","text":"%s %s %s %s"}]}}\n' "$CORRAL_TEST_WHO" "${CORRAL_TEST_DAEMON_ONLY:-unset}" "$CORRAL_TEST_ADDED" "$PWD"; echo '`+resultJSON+`'`)
	cmd.Env = append(vars, "CORRAL_TEST_WHO=caller")
	cmd.Dir = work
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("exec: %v\n%s%s", err, out.String(), errb.String())
	}
	real, _ := filepath.EvalSymlinks(work)
	if want := "assistant: caller unset flag "; !strings.Contains(out.String(), want) ||
		!(strings.Contains(out.String(), work) || strings.Contains(out.String(), real)) {
		t.Fatalf("the job did not get the caller's environment and folder (want %q and %s):\n%s", want, work, out.String())
	}
}
