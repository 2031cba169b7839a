package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/proctest"

	"github.com/corral-dev/corral/internal/lab/mockmodel"
)

type integrationJSON struct {
	ID, Name, Agent, State, Source string
	Integration                    string
	IntegrationError               string `json:"integration_error"`
}

func (e *env) integration(ref string) integrationJSON {
	e.t.Helper()
	var ps []integrationJSON
	e.lookOrRun("/v1/panes", &ps, "ls", "--json")
	for _, p := range ps {
		if p.ID == ref || p.Name == ref {
			return p
		}
	}
	e.t.Fatalf("no pane %s in %+v", ref, ps)
	return integrationJSON{}
}

// waitIntegration polls the pane until ok says its report is the one
// expected.
func (e *env) waitIntegration(ref string, ok func(integrationJSON) bool) integrationJSON {
	e.t.Helper()
	var p integrationJSON
	if !proctest.WaitFor(10*time.Second, func() bool { p = e.integration(ref); return ok(p) }) {
		e.t.Fatalf("pane %s: %+v\n%s", ref, p, e.must("screen", ref))
	}
	return p
}

// A pane whose agent is started by a script of the user's gets no hooks
// (they go on the agent's command line, which corral never sees), and
// says so, once the agent is recognised from its process; through env,
// which corral sees through, the hooks are added.
func TestIntegrationThroughWrapper(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bin := filepath.Join(e.dir, "bin")
	os.MkdirAll(bin, 0o755)
	// A stand-in claude: a script of that name, so its process is
	// recognised as Claude Code, running the fake agent.
	argsFile := filepath.Join(e.dir, "args")
	proctest.WriteExecutable(filepath.Join(bin, "claude"), []byte("#!/bin/sh\necho \"$*\" >> "+argsFile+"\n"+corralBin+" fake-agent\n"), 0o755)
	proctest.WriteExecutable(filepath.Join(bin, "wrap.sh"), []byte("#!/bin/sh\nexec \"$(dirname \"$0\")/claude\"\n"), 0o755)

	e.must("run", "--name", "w", "--", filepath.Join(bin, "wrap.sh"))
	p := e.waitIntegration("w", func(p integrationJSON) bool { return p.Agent == "claude-code" })
	if p.Integration != "" || !strings.Contains(p.IntegrationError, "claude-code recognised") || !strings.Contains(p.IntegrationError, "wrap.sh") {
		t.Fatalf("through a wrapper: %+v", p)
	}
	if out := e.must("ls"); !strings.Contains(out, p.ID+": no hooks: claude-code recognised") {
		t.Fatalf("ls does not say it:\n%s", out)
	}

	e.must("run", "--name", "d", "--", "env", "X=1", filepath.Join(bin, "claude"))
	p = e.waitIntegration("d", func(p integrationJSON) bool { return p.Agent == "claude-code" })
	if p.Integration != "claude-code" || p.IntegrationError != "" {
		t.Fatalf("through env: %+v", p)
	}
	// The agent is recognised from its command line, before the script
	// has written its arguments.
	waitFor(t, 10*time.Second, "the hooks on the command line", func() bool {
		b, _ := os.ReadFile(argsFile)
		return strings.Contains(string(b), "\n--settings {\"hooks\"")
	})
}

// Where corral's Gemini CLI settings file is used (root, a private state
// folder) and Gemini CLI refuses it anyway, its warning on the screen
// turns the claimed integration into an integration error.
func TestGeminiRefusalOnScreen(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("the system defaults route is root's only")
	}
	home, _ := os.UserHomeDir()
	private, err := os.MkdirTemp(home, ".corral-integ-test-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(private) })
	os.Chmod(private, 0o700)
	e := newEnv(t)
	for i, v := range e.vars {
		if strings.HasPrefix(v, "CORRAL_STATE_DIR=") {
			e.vars[i] = "CORRAL_STATE_DIR=" + filepath.Join(private, "state")
		}
	}
	e.must("run", "--name", "g", "--agent", "gemini", "--", "sh", "-c",
		`read x; echo " ⚠ Security Warning: Skipping system defaults file '$GEMINI_CLI_SYSTEM_DEFAULTS_PATH': not root"; sleep 60`)
	p := e.integration("g")
	if p.Integration != "gemini" || p.IntegrationError != "" {
		t.Skipf("the system defaults route is not in use here: %+v", p)
	}
	e.must("send", "g", "", "--enter")
	p = e.waitIntegration("g", func(p integrationJSON) bool { return p.IntegrationError != "" })
	if p.Integration != "" || !strings.Contains(p.IntegrationError, "Skipping system defaults file") ||
		!strings.Contains(p.IntegrationError, "corral integrate gemini") {
		t.Fatalf("after the warning: %+v", p)
	}
}

// TestRealGeminiExtension runs the real Gemini CLI as an ordinary user
// (never root, which hides the problem: run as root, the test runs corral
// and Gemini CLI as $CORRAL_TEST_USER, default nobody) against a scripted
// Gemini API on loopback. Without `corral integrate gemini` the pane says
// it has no hooks and why; with it, the hooks report the turn. Opt-in:
// runs when a `gemini` binary is found ($CORRAL_GEMINI, or on PATH).
func TestRealGeminiExtension(t *testing.T) {
	t.Parallel()
	gemini := realCLI(t, "CORRAL_GEMINI", "gemini", "@google/gemini-cli")
	model, err := mockmodel.StartGemini("ls -la")
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	dir, err := os.MkdirTemp("", "corral-gemini-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Getuid() == 0 {
		name := os.Getenv("CORRAL_TEST_USER")
		if name == "" {
			name = "nobody"
		}
		u, err := user.Lookup(name)
		if err != nil {
			t.Skipf("no user %s to run Gemini CLI as: %v", name, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	home, work, bin := filepath.Join(dir, "home"), filepath.Join(dir, "work"), filepath.Join(dir, "corral")
	os.MkdirAll(filepath.Join(home, ".gemini"), 0o700)
	os.MkdirAll(work, 0o700)
	os.WriteFile(filepath.Join(home, ".gemini", "settings.json"),
		[]byte(`{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}}}`), 0o600)
	copyFile(t, corralBin, bin)
	if cred != nil {
		filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, int(cred.Uid), int(cred.Gid)) })
	}
	vars := []string{"CORRAL_SOCKET=" + filepath.Join(dir, "s.sock"), "CORRAL_STATE_DIR=" + filepath.Join(dir, "state"),
		"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "HOME=" + home, "PATH=" + os.Getenv("PATH")}
	run := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Dir = vars, work
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return out.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatalf("corral %v: %v", args, err)
		}
		return out.String(), 0
	}
	must := func(args ...string) string {
		t.Helper()
		out, code := run(args...)
		if code != 0 {
			t.Fatalf("corral %v: exit %d: %s", args, code, out)
		}
		return out
	}
	t.Cleanup(func() { run("shutdown") })
	paneOf := func(ref string) integrationJSON {
		var ps []integrationJSON
		json.Unmarshal([]byte(must("ls", "--json")), &ps)
		for _, p := range ps {
			if p.Name == ref {
				return p
			}
		}
		t.Fatalf("no pane %s", ref)
		return integrationJSON{}
	}
	start := func(name string) {
		must("run", "--name", name, "--cwd", work, "--env", "GEMINI_API_KEY=test-key", "--env", "GOOGLE_GEMINI_BASE_URL="+model.URL, "--", gemini)
		if !proctest.WaitFor(60*time.Second, func() bool { return strings.Contains(must("screen", name), "Type your message") }) {
			t.Fatalf("Gemini CLI never showed its input box:\n%s", must("screen", name))
		}
	}

	start("plain")
	if p := paneOf("plain"); p.Integration != "" || !strings.Contains(p.IntegrationError, "corral integrate gemini") ||
		!strings.Contains(p.IntegrationError, "not root") {
		t.Fatalf("without the extension: %+v", p)
	}
	must("integrate", "gemini")
	start("ext")
	if p := paneOf("ext"); p.Integration != "gemini" || p.IntegrationError != "" {
		t.Fatalf("with the extension: %+v", p)
	}
	stopWatch := watchSources(func() (string, bool) {
		out, code := run("ls", "--json")
		return out, code == 0
	}, "ext")
	t.Cleanup(func() { stopWatch() })
	must("send", "ext", "please list the files", "--enter")
	for i := 0; ; i++ { // an Enter during start-up is dropped: press it again
		if _, code := run("wait", "ext", "--state", "working,done", "--timeout", "3s"); code == 0 {
			break
		}
		if i == 10 {
			t.Fatalf("the prompt was never submitted:\n%s", must("screen", "ext"))
		}
		must("send", "ext", "", "--enter", "--force")
	}
	if out, code := run("wait", "ext", "--state", "done", "--timeout", "60s"); code != 0 {
		t.Fatalf("turn never ended (%s):\n%s", out, must("screen", "ext"))
	}
	seen := stopWatch()
	events := must("events", "--since", "1h")
	if !reportedByHooks(events, `"name":"ext"`, seen) {
		t.Fatalf("the turn was not reported through Gemini CLI's hooks (ls --json through the turn: %v):\n%s", seen, events)
	}
	must("integrate", "gemini", "--remove")
	if _, err := os.Stat(filepath.Join(home, ".gemini", "extensions", "corral")); !os.IsNotExist(err) {
		t.Fatalf("the extension is still there: %v", err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := proctest.WriteExecutable(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// A Gemini CLI pane in a folder Gemini CLI does not trust says why its
// hooks are off until the first hook report proves otherwise.
func TestGeminiUntrustedFolderSaysWhy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	home, work := t.TempDir(), t.TempDir()
	dir, err := agents.InstallGemini(home)
	if err != nil {
		t.Fatal(err)
	}
	var ext struct {
		Hooks map[string][]struct{ Hooks []struct{ Command string } }
	}
	b, _ := os.ReadFile(filepath.Join(dir, "hooks", "hooks.json"))
	if err := json.Unmarshal(b, &ext); err != nil || len(ext.Hooks["BeforeAgent"]) == 0 {
		t.Fatalf("the extension's hooks: %v %s", err, b)
	}
	hook := ext.Hooks["BeforeAgent"][0].Hooks[0].Command
	// The program plays Gemini CLI: after a line on its input, it reports
	// a turn through the hook command its extension would run.
	script := `read x; echo '{"hook_event_name":"BeforeAgent","prompt":"hi"}' | sh -c "$0"; sleep 60`
	e.must("run", "--name", "g", "--agent", "gemini", "--cwd", work, "--env", "HOME="+home,
		"--env", "GEMINI_CLI_SYSTEM_SETTINGS_PATH="+filepath.Join(home, "none.json"), "--", "sh", "-c", script, hook)
	p := e.integration("g")
	if p.Integration != "" || !strings.Contains(p.IntegrationError, "until it trusts the folder") || !strings.Contains(p.IntegrationError, work) {
		t.Fatalf("untrusted folder: %+v", p)
	}
	if out := e.must("ls"); !strings.Contains(out, "no hooks: Gemini CLI loads no hooks in "+work) {
		t.Fatalf("ls does not say why:\n%s", out)
	}
	e.must("send", "g", "", "--enter", "--force")
	p = e.waitIntegration("g", func(p integrationJSON) bool { return p.Integration == "gemini" })
	if p.IntegrationError != "" {
		t.Fatalf("after a hook report: %+v", p)
	}
}
