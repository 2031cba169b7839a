package agents

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/corral-dev/corral/internal/proctest"
)

func TestFind(t *testing.T) {
	resolve = func(w string) string {
		return map[string]string{"cc": "/opt/lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe"}[w]
	}
	defer func() { resolve = defaultResolve }()
	tests := []struct {
		argv   string
		agent  string
		at     int
		hidden string
	}{
		{"claude", "claude-code", 1, ""},
		{"/usr/local/bin/claude --permission-mode default", "claude-code", 1, ""},
		{"./node_modules/.bin/codex exec hi", "codex", 1, ""},
		{"cc", "claude-code", 1, ""},
		{"gemini -m x", "gemini", 1, ""},
		{"npx @openai/codex", "codex", 2, ""},
		{"npx -y @openai/codex@0.171.0 exec hi", "codex", 3, ""},
		{"npx --package=@openai/codex codex", "codex", 3, ""},
		{"npx -p @google/gemini-cli gemini -m x", "gemini", 4, ""},
		{"npx -y @anthropic-ai/claude-code@latest", "claude-code", 3, ""},
		{"bunx @openai/codex", "codex", 2, ""},
		{"pnpm dlx @openai/codex", "codex", 3, ""},
		{"yarn dlx @google/gemini-cli", "gemini", 3, ""},
		{"npm exec -- @openai/codex", "codex", 4, ""},
		{"npm exec @openai/codex", "", 0, "npm exec without --"},
		{"npx -c codex", "", 0, "npx -c"},
		{"npx cowsay", "", 0, "npx cowsay"},
		{"node /w/node_modules/@openai/codex/bin/codex.js", "codex", 2, ""},
		{"node --no-warnings /w/node_modules/@google/gemini-cli/bundle/gemini.js -m x", "gemini", 3, ""},
		{"node -r ./hook.js /w/node_modules/.bin/claude", "claude-code", 4, ""},
		{"nodejs /w/node_modules/@anthropic-ai/claude-code/cli.js", "claude-code", 2, ""},
		{"node -e require('x')", "", 0, "node -e"},
		{"node ./server.js", "", 0, "node ./server.js"},
		{"env FOO=1 -u BAR claude", "claude-code", 5, ""},
		{"env -i PATH=/bin /usr/bin/codex", "codex", 4, ""},
		{"/usr/bin/env -S claude --x", "", 0, "env -S"},
		{"nice -n 5 codex", "codex", 4, ""},
		{"timeout -s KILL 10m claude", "claude-code", 5, ""},
		{"nohup env A=b npx @openai/codex", "codex", 5, ""},
		{"stdbuf -oL -e 0 gemini", "gemini", 5, ""},
		{"bash -c claude", "", 0, "bash -c"},
		{"sh -lc claude", "", 0, "sh -lc"},
		{"./run-claude.sh", "", 0, "./run-claude.sh"},
		{"bash", "", 0, "bash"},
	}
	for _, tt := range tests {
		f := Find(strings.Fields(tt.argv))
		if f.Agent != tt.agent || f.At != tt.at || f.Hidden != tt.hidden {
			t.Errorf("Find(%s) = %+v; want agent %q at %d hidden %q", tt.argv, f, tt.agent, tt.at, tt.hidden)
		}
	}
}

func TestIntegrateThroughLaunchers(t *testing.T) {
	home := t.TempDir()
	env := []string{"HOME=" + home, "CORRAL_PANE=p1", "CORRAL_TOKEN=t", "CORRAL_SOCKET=/s"}
	o := Options{Hook: []string{"/bin/corral", "hook"}, Env: env, Dir: filepath.Join(home, "state")}
	tests := []struct {
		argv, want string
		agent      string
	}{
		{"npx -y @openai/codex exec hi", `npx -y @openai/codex -c notify=["/bin/corral","hook","--agent","codex"] exec hi`, "codex"},
		{"node /w/node_modules/@openai/codex/bin/codex.js", `node /w/node_modules/@openai/codex/bin/codex.js -c notify=["/bin/corral","hook","--agent","codex"]`, "codex"},
		{"env A=1 codex", `env A=1 codex -c notify=["/bin/corral","hook","--agent","codex"]`, "codex"},
	}
	for _, tt := range tests {
		l := IntegrateRun(strings.Fields(tt.argv), o)
		if strings.Join(l.Argv, " ") != tt.want || !slices.Contains(l.Applied, tt.agent) {
			t.Errorf("%s: %q applied %v", tt.argv, l.Argv, l.Applied)
		}
		if in, problem := l.Status(tt.agent); in != tt.agent || problem != "" {
			t.Errorf("%s: status %q %q", tt.argv, in, problem)
		}
	}
	l := IntegrateRun([]string{"npx", "@anthropic-ai/claude-code", "--permission-mode", "default"}, o)
	if l.Argv[2] != "--settings" || l.Argv[4] != "--permission-mode" {
		t.Fatalf("claude through npx: %q", l.Argv)
	}
	// Through a script of the user's: the agent is recognised later, from
	// its process or screen, and its missing hooks are said.
	l = IntegrateRun([]string{"./wrap.sh", "x"}, o)
	if strings.Join(l.Argv, " ") != "./wrap.sh x" {
		t.Fatalf("wrapper changed: %q", l.Argv)
	}
	for _, a := range []string{"claude-code", "codex"} {
		in, problem := l.Status(a)
		if in != "" || !strings.Contains(problem, a+" recognised") || !strings.Contains(problem, "./wrap.sh") {
			t.Errorf("%s through a wrapper: %q %q", a, in, problem)
		}
	}
	if in, problem := l.Status("opencode"); in != "" || problem != "" {
		t.Errorf("an agent without integration: %q %q", in, problem)
	}
	// Not yet recognised (the generic manifest): the command line's agent.
	if in, _ := IntegrateRun([]string{"claude"}, o).Status("generic"); in != "claude-code" {
		t.Errorf("claude before recognition: %q", in)
	}
}

// The extension's layout is what Gemini CLI 0.61.0's ExtensionManager
// loads: a folder under ~/.gemini/extensions holding gemini-extension.json
// with a name and a version, and hooks/hooks.json whose "hooks" object maps
// event names to definitions {matcher, hooks: [{type: "command", command}]}.
// No ownership check applies to extensions.
func TestGeminiExtension(t *testing.T) {
	home := t.TempDir()
	dir, err := InstallGemini(home)
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join(home, ".gemini", "extensions", "corral") || !GeminiInstalled(home) {
		t.Fatalf("installed at %s", dir)
	}
	var manifest struct{ Name, Version string }
	b, _ := os.ReadFile(filepath.Join(dir, "gemini-extension.json"))
	if json.Unmarshal(b, &manifest) != nil || manifest.Name != "corral" || manifest.Version == "" {
		t.Fatalf("manifest %s", b)
	}
	var hooks struct {
		Hooks map[string][]struct {
			Matcher string
			Hooks   []struct{ Type, Command string }
		}
	}
	b, _ = os.ReadFile(filepath.Join(dir, "hooks", "hooks.json"))
	if err := json.Unmarshal(b, &hooks); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{"Notification", "BeforeAgent", "AfterAgent", "AfterTool", "SessionEnd"} {
		h := hooks.Hooks[ev]
		if len(h) != 1 || h[0].Hooks[0].Type != "command" || h[0].Hooks[0].Command != geminiHookCommand {
			t.Fatalf("%s: %+v", ev, h)
		}
	}
	// Installing again is fine; a folder of someone else's is left alone.
	if _, err := InstallGemini(home); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	os.MkdirAll(GeminiExtensionDir(other), 0o755)
	if _, err := InstallGemini(other); err == nil {
		t.Fatal("overwrote a folder that is not corral's")
	}
	if _, _, err := RemoveGemini(other); err == nil || !exists(GeminiExtensionDir(other)) {
		t.Fatal("removed a folder that is not corral's")
	}

	env := []string{"HOME=" + home, "CORRAL_PANE=p1", "CORRAL_TOKEN=t0k", "CORRAL_SOCKET=/run/c.sock"}
	o := Options{Hook: []string{"/opt/corral", "hook"}, Env: env, Dir: t.TempDir(), Cwd: "/src/app"}
	l := IntegrateRun([]string{"bash"}, o)
	want := []string{"GEMINI_CLI_CORRAL_HOOK=/opt/corral", "GEMINI_CLI_CORRAL_PANE=p1", "GEMINI_CLI_CORRAL_TOKEN=t0k", "GEMINI_CLI_CORRAL_SOCKET=/run/c.sock"}
	if !slices.Equal(l.Env, want) || l.Watch {
		t.Fatalf("env %q", l.Env)
	}
	if in, problem := l.Status("gemini"); in != "gemini" || problem != "" {
		t.Fatalf("gemini in a bash pane: %q %q", in, problem)
	}
	// Turned off for this run: by --extensions, or for the folder.
	if l := IntegrateRun([]string{"gemini", "-e", "other"}, o); !strings.Contains(l.Missing["gemini"], "--extensions") {
		t.Errorf("-e other: %+v", l)
	}
	if l := IntegrateRun([]string{"gemini", "--extensions=other,corral"}, o); l.Missing["gemini"] != "" {
		t.Errorf("--extensions with corral: %+v", l)
	}
	os.WriteFile(filepath.Join(home, ".gemini", "extensions", "extension-enablement.json"),
		[]byte(`{"corral": {"overrides": ["!/src/*", "/src/other/"]}}`), 0o644)
	if l := IntegrateRun([]string{"gemini"}, o); !strings.Contains(l.Missing["gemini"], "disabled for /src/app") {
		t.Errorf("disabled for the folder: %+v", l)
	}
	o.Cwd = "/src/other"
	if l := IntegrateRun([]string{"gemini"}, o); l.Missing["gemini"] != "" {
		t.Errorf("enabled for the folder: %+v", l)
	}
	if _, removed, err := RemoveGemini(home); err != nil || !removed || exists(dir) {
		t.Fatalf("remove: %v %v", removed, err)
	}
}

// The hook as Gemini CLI runs it (bash -c, its sanitised environment):
// the pane's variables reach corral hook under their own names, and
// outside corral it does nothing and succeeds.
func TestGeminiHookCommand(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	fake := filepath.Join(dir, "corral")
	proctest.WriteExecutable(fake, []byte("#!/bin/sh\necho \"$CORRAL_PANE $CORRAL_TOKEN $CORRAL_SOCKET $*\" > "+out+"\n"), 0o755)
	cmd := exec.Command("bash", "-c", geminiHookCommand)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "GEMINI_CLI_CORRAL_HOOK=" + fake, "GEMINI_CLI_CORRAL_PANE=p1",
		"GEMINI_CLI_CORRAL_TOKEN=t0k", "GEMINI_CLI_CORRAL_SOCKET=/run/c.sock"}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if b, _ := os.ReadFile(out); string(b) != "p1 t0k /run/c.sock hook --agent gemini\n" {
		t.Fatalf("hook got %q", b)
	}
	os.Remove(out)
	cmd = exec.Command("bash", "-c", geminiHookCommand)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if b, err := cmd.CombinedOutput(); err != nil || len(b) != 0 || exists(out) {
		t.Fatalf("outside corral: %v %q", err, b)
	}
}

// GeminiSystemFileCheck is Gemini CLI's rule for system settings files,
// and IntegrateRun uses that route only where it passes.
func TestGeminiSystemDefaults(t *testing.T) {
	home := t.TempDir() // no extension here
	env := []string{"HOME=" + home, "CORRAL_PANE=p1", "CORRAL_TOKEN=t0k"}
	// Under the system's temporary folder (writable by all): refused.
	dir := filepath.Join(t.TempDir(), "integrations")
	l := IntegrateRun([]string{"gemini"}, Options{Hook: []string{"/opt/corral", "hook"}, Env: env, Dir: dir})
	if in, problem := l.Status("gemini"); in != "" || !strings.Contains(problem, "corral integrate gemini") || len(l.Env) != 0 {
		t.Fatalf("under %s: %q %q %q", dir, in, problem, l.Env)
	}
	if exists(filepath.Join(dir, "gemini-system-defaults.json")) {
		t.Fatal("wrote a file Gemini CLI would refuse")
	}
	os.WriteFile(filepath.Join(dir, "x.json"), []byte("{}"), 0o600)
	if err := GeminiSystemFileCheck(filepath.Join(dir, "x.json")); err == nil ||
		(os.Getuid() == 0 && !strings.Contains(err.Error(), "writable by group or others")) ||
		(os.Getuid() != 0 && !strings.Contains(err.Error(), "not root")) {
		t.Fatalf("check under a shared folder: %v", err)
	}
	// The user's own setting, or the machine's file, is left alone.
	if l := IntegrateRun([]string{"gemini"}, Options{Hook: []string{"c", "hook"}, Env: append(env, "GEMINI_CLI_SYSTEM_DEFAULTS_PATH=/mine.json"), Dir: dir}); len(l.Env) != 0 || l.Missing["gemini"] == "" {
		t.Fatalf("overrode the user's setting: %+v", l)
	}
	if os.Getuid() != 0 {
		return
	}
	// Root, in a private folder of root's: Gemini CLI would load it.
	rootHome, _ := os.UserHomeDir()
	private, err := os.MkdirTemp(rootHome, ".corral-agents-test-")
	if err != nil {
		t.Skip(err)
	}
	defer os.RemoveAll(private)
	os.Chmod(private, 0o700)
	probe := filepath.Join(private, "probe")
	os.WriteFile(probe, nil, 0o600)
	if err := GeminiSystemFileCheck(probe); err != nil {
		t.Skipf("%s is not a private chain of root's: %v", private, err)
	}
	l = IntegrateRun([]string{"gemini"}, Options{Hook: []string{"/opt/corral", "hook"}, Env: env, Dir: filepath.Join(private, "integrations")})
	path := filepath.Join(private, "integrations", "gemini-system-defaults.json")
	if !slices.Contains(l.Env, "GEMINI_CLI_SYSTEM_DEFAULTS_PATH="+path) || !l.Watch || !slices.Contains(l.Applied, "gemini") {
		t.Fatalf("root: %+v", l)
	}
	if err := GeminiSystemFileCheck(path); err != nil {
		t.Fatal(err)
	}
	// Not root's: refused, with Gemini CLI's reason.
	os.Chown(path, 65534, 65534)
	if err := GeminiSystemFileCheck(path); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Fatalf("a file of nobody's: %v", err)
	}
	os.Chown(path, 0, 0)
	os.Chmod(filepath.Join(private, "integrations"), 0o777)
	if err := GeminiSystemFileCheck(path); err == nil || !strings.Contains(err.Error(), "mode 777") {
		t.Fatalf("a folder all can write: %v", err)
	}
	os.Chmod(filepath.Join(private, "integrations"), 0o700)
	link := filepath.Join(private, "link.json")
	os.Symlink(path, link)
	os.Lchown(link, 65534, 65534)
	if err := GeminiSystemFileCheck(link); err == nil || !strings.Contains(err.Error(), "link owned by uid 65534") {
		t.Fatalf("a link of nobody's: %v", err)
	}
}

func TestScreenProblem(t *testing.T) {
	tests := []struct {
		lines []string
		want  string
	}{
		{[]string{"", " ⚠ Security Warning: Skipping system defaults file '/tmp/x/gemini-system-defaults.json': Parent directory '/tmp' is insecure"},
			"Skipping system defaults file '/tmp/x"},
		{[]string{" ⚠ Security Warning: Skipping system defa", "ults file '/tmp/x.json'"}, "Skipping system defaults file"},
		{[]string{"> Type your message or @path/to/file"}, ""},
	}
	for _, tt := range tests {
		got := ScreenProblem("gemini", tt.lines)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("ScreenProblem(%q) = %q", tt.lines, got)
		}
	}
}

// corral's own fake agent misses no hooks: it only draws agents' screens.
func TestFakeAgentMissesNoHooks(t *testing.T) {
	l := IntegrateRun([]string{"/opt/corral", "fake-agent", "--auto"}, Options{Hook: []string{"/opt/corral", "hook"}, Dir: t.TempDir()})
	for agent, why := range l.Missing {
		if agent != "gemini" {
			t.Errorf("%s missing: %s", agent, why)
		}
	}
	// Another program of that name is not corral's.
	l = IntegrateRun([]string{"/elsewhere/corral", "fake-agent"}, Options{Hook: []string{"/opt/corral", "hook"}, Dir: t.TempDir()})
	if l.Missing["claude-code"] == "" {
		t.Error("a program that is not corral's own fake agent was exempted")
	}
}

// Gemini CLI loads no hooks in a folder it does not trust: a launch there
// carries the integration but says why it will likely not load.
func TestGeminiFolderTrustDoubt(t *testing.T) {
	work := t.TempDir()
	tests := []struct {
		name     string
		settings string // the user's settings.json ("" none)
		trusted  string // trustedFolders.json ("" none)
		want     string // in the doubt; "" none
	}{
		{"on by default, not decided", "", "", "until it trusts the folder"},
		{"on, trusted", `{"security": {"folderTrust": {"enabled": true}}}`, `{"` + work + `": "TRUST_FOLDER"}`, ""},
		{"on, parent trusted", "", `{"` + filepath.Join(work, "x") + `": "TRUST_PARENT"}`, ""},
		{"on, refused", "", `{"` + work + `": "DO_NOT_TRUST"}`, "DO_NOT_TRUST in"},
		{"off", "// mine\n{\"security\": {\"folderTrust\": {\"enabled\": false}}}", "", ""},
		{"a broken trust file: Gemini CLI says so itself", "", `{"` + work + `": "MAYBE"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			if _, err := InstallGemini(home); err != nil {
				t.Fatal(err)
			}
			if tt.settings != "" {
				os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(tt.settings), 0o600)
			}
			if tt.trusted != "" {
				os.WriteFile(filepath.Join(home, ".gemini", "trustedFolders.json"), []byte(tt.trusted), 0o600)
			}
			env := []string{"HOME=" + home, "GEMINI_CLI_SYSTEM_SETTINGS_PATH=" + filepath.Join(home, "none.json")}
			l := IntegrateRun([]string{"gemini"}, Options{Hook: []string{"/opt/corral", "hook"}, Env: env, Dir: t.TempDir(), Cwd: work})
			if !slices.Contains(l.Applied, "gemini") {
				t.Fatalf("integration not carried: %+v", l)
			}
			got := l.Doubt["gemini"]
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("doubt %q; want one with %q", got, tt.want)
			}
			if got != "" && !strings.Contains(got, work) {
				t.Fatalf("the doubt does not name the folder: %q", got)
			}
		})
	}
}

// Launches that say the same keep one copy of what they miss: the daemon
// keeps each pane's for its life, a thousand panes over.
func TestMissingShared(t *testing.T) {
	// The shared copy lives as long as some pane keeps it: a collection
	// between the two launches, with none kept, may free it.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	o := Options{Hook: []string{"/opt/corral", "hook"}, Dir: t.TempDir()}
	a := IntegrateRun([]string{"bash", "-c", "claude"}, o)
	b := IntegrateRun([]string{"bash", "-c", "claude"}, o)
	if len(a.Missing) == 0 {
		t.Fatal("nothing missing through bash -c")
	}
	for agent, why := range a.Missing {
		if other := b.Missing[agent]; other != why || unsafe.StringData(other) != unsafe.StringData(why) {
			t.Errorf("%s: two launches keep two copies of %q", agent, why)
		}
	}
}
