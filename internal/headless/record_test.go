package headless

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/lab/mockmodel"
)

// TestRecordRealStreams runs the real agent CLIs headless against the
// scripted model servers on loopback and saves what they print under
// testdata/headless/AGENT/CASE.jsonl (stdout) and CASE.stderr. Opt-in:
// CORRAL_RECORD_HEADLESS=1, with the CLIs in CORRAL_AGENTS_BIN (a folder)
// or on PATH. The recordings are the parser tests' input.
func TestRecordRealStreams(t *testing.T) {
	if os.Getenv("CORRAL_RECORD_HEADLESS") == "" {
		t.Skip("set CORRAL_RECORD_HEADLESS=1 to record the real CLIs' streams")
	}
	bin := os.Getenv("CORRAL_AGENTS_BIN")
	find := func(name string) string {
		if bin != "" {
			return filepath.Join(bin, name)
		}
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("no %s CLI", name)
		}
		return p
	}
	only := os.Getenv("CORRAL_RECORD_ONLY") // "codex/prose", "gemini", …
	type rec struct {
		agent, name string
		lost        bool          // the model server is gone from the start
		wait        time.Duration // how long to let it run
		argv        func(url, home, work string) ([]string, []string)
		stdin       string
		unescalated bool   // Codex: a shell step that does not ask to leave the sandbox
		acp         string // the prompt, for an ACP run (corral's side of it is Run's)
		relay       string // the prompt, for a run through Qwen Code's permission relay
		policy      string // the policy answering an ACP run's permission requests
	}
	codex := func(prompt string, extra ...string) func(url, home, work string) ([]string, []string) {
		return func(url, home, work string) ([]string, []string) {
			cfg := fmt.Sprintf("model = \"gpt-5.1-codex\"\nmodel_provider = \"mock\"\n[model_providers.mock]\nname = \"mock\"\nbase_url = %q\nenv_key = \"MOCK_API_KEY\"\nwire_api = \"responses\"\n", url+"/v1")
			os.MkdirAll(filepath.Join(home, ".codex"), 0o700)
			os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(cfg), 0o600)
			argv := append([]string{find("codex"), "exec", "--json", "--skip-git-repo-check"}, extra...)
			return append(argv, prompt), []string{"CODEX_HOME=" + filepath.Join(home, ".codex"), "MOCK_API_KEY=test-key"}
		}
	}
	gemini := func(args ...string) func(url, home, work string) ([]string, []string) {
		return func(url, home, work string) ([]string, []string) {
			os.MkdirAll(filepath.Join(home, ".gemini"), 0o700)
			os.WriteFile(filepath.Join(home, ".gemini", "settings.json"),
				[]byte(`{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}}}`), 0o600)
			return append([]string{find("gemini")}, args...), []string{"GEMINI_API_KEY=test-key", "GOOGLE_GEMINI_BASE_URL=" + url}
		}
	}
	qwen := func(args ...string) func(url, home, work string) ([]string, []string) {
		return func(url, home, work string) ([]string, []string) {
			os.MkdirAll(filepath.Join(home, ".qwen"), 0o700)
			os.WriteFile(filepath.Join(home, ".qwen", "settings.json"), []byte(`{"general":{"enableAutoUpdate":false},"$version":4}`), 0o600)
			return append([]string{find("qwen")}, args...), []string{"OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=test-key", "OPENAI_MODEL=mock-model"}
		}
	}
	acpPrompt := func(prompt string) string {
		// corral's own ACP requests, numbered as acpClient numbers them; the
		// session id is filled in by the agent's answer, so the prompt is sent
		// after a pause with a placeholder the agent rejects if wrong.
		return prompt
	}
	_ = acpPrompt
	recs := []rec{
		{agent: "codex", name: "prose", wait: 60 * time.Second, argv: codex("corral:prose say hello")},
		{agent: "codex", name: "shell", wait: 60 * time.Second, argv: codex("corral:shell run it")},
		{agent: "codex", name: "edit", wait: 60 * time.Second, argv: codex("corral:edit write the file", "--sandbox", "workspace-write")},
		{agent: "codex", name: "shell_fails", wait: 60 * time.Second, unescalated: true, argv: codex("corral:shell run it", "--sandbox", "workspace-write")},
		{agent: "codex", name: "refused", unescalated: true, wait: 40 * time.Second, argv: codex("corral-fail say hello")},
		{agent: "codex", name: "lost", lost: true, wait: 25 * time.Second, argv: codex("corral:prose say hello")},
		{agent: "gemini", name: "prose", wait: 60 * time.Second, argv: gemini("-p", "corral:prose say hello", "--output-format", "stream-json")},
		{agent: "gemini", name: "shell", wait: 60 * time.Second, argv: gemini("-p", "corral:shell run it", "--output-format", "stream-json")},
		{agent: "gemini", name: "shell_yolo", wait: 60 * time.Second, argv: gemini("-p", "corral:shell run it", "--output-format", "stream-json", "--yolo")},
		{agent: "gemini", name: "edit_yolo", wait: 60 * time.Second, argv: gemini("-p", "corral:edit write the file", "--output-format", "stream-json", "--yolo")},
		{agent: "gemini", name: "acp_shell_allowed", wait: 60 * time.Second, argv: gemini("--experimental-acp"), acp: "corral:shell run it",
			policy: "[[rule]]\ntool = \"execute\"\ninput = \"^touch \"\ndecision = \"allow\"\n"},
		{agent: "gemini", name: "acp_edit_denied", wait: 60 * time.Second, argv: gemini("--experimental-acp"), acp: "corral:edit write the file",
			policy: "[[rule]]\ntool = \"execute\"\ndecision = \"allow\"\n"},
		{agent: "qwen", name: "relay_shell_allowed", wait: 60 * time.Second, argv: qwen("--input-format", "stream-json", "--output-format", "stream-json", "--channel", "SDK"),
			relay: "corral:shell run it", policy: "[[rule]]\ntool = \"run_shell_command\"\ninput = \"^touch \"\ndecision = \"allow\"\n"},
		{agent: "qwen", name: "relay_edit_denied", wait: 60 * time.Second, argv: qwen("--input-format", "stream-json", "--output-format", "stream-json", "--channel", "SDK"),
			relay: "corral:edit write the file", policy: "[[rule]]\ntool = \"run_shell_command\"\ndecision = \"allow\"\n"},
		{agent: "qwen", name: "acp_shell_allowed", wait: 60 * time.Second, argv: qwen("--acp"), acp: "corral:shell run it",
			policy: "[[rule]]\ntool = \"execute\"\ninput = \"touch\"\ndecision = \"allow\"\n"},
		{agent: "qwen", name: "acp_edit_denied", wait: 60 * time.Second, argv: qwen("--acp"), acp: "corral:edit write the file",
			policy: "[[rule]]\ntool = \"execute\"\ndecision = \"allow\"\n"},
		{agent: "gemini", name: "refused", wait: 40 * time.Second, argv: gemini("-p", "corral-fail say hello", "--output-format", "stream-json")},
		{agent: "gemini", name: "lost", lost: true, wait: 25 * time.Second, argv: gemini("-p", "say hello", "--output-format", "stream-json")},
		{agent: "qwen", name: "prose", wait: 60 * time.Second, argv: qwen("-p", "corral:prose say hello", "--output-format", "stream-json")},
		{agent: "qwen", name: "shell", wait: 60 * time.Second, argv: qwen("-p", "corral:shell run it", "--output-format", "stream-json")},
		{agent: "qwen", name: "shell_yolo", wait: 60 * time.Second, argv: qwen("-p", "corral:shell run it", "--output-format", "stream-json", "--yolo")},
		{agent: "qwen", name: "edit_yolo", wait: 60 * time.Second, argv: qwen("-p", "corral:edit write the file", "--output-format", "stream-json", "--yolo")},
		{agent: "qwen", name: "refused", wait: 40 * time.Second, argv: qwen("-p", "corral-fail say hello", "--output-format", "stream-json")},
		{agent: "qwen", name: "lost", lost: true, wait: 40 * time.Second, argv: qwen("-p", "corral:prose say hello", "--output-format", "stream-json")},
	}
	out := filepath.Join("..", "..", "testdata", "headless")
	for _, r := range recs {
		id := r.agent + "/" + r.name
		if only != "" && !strings.HasPrefix(id, only) {
			continue
		}
		t.Run(id, func(t *testing.T) {
			var model *mockmodel.Server
			var err error
			switch {
			case r.agent == "codex" && r.unescalated:
				model, err = mockmodel.StartResponsesUnescalated("touch corral-shell.txt && exit 3")
			case r.agent == "codex":
				model, err = mockmodel.StartResponses("touch corral-shell.txt && exit 3")
			case r.agent == "gemini":
				model, err = mockmodel.StartGeminiSteps("touch corral-shell.txt && exit 3")
			default:
				model, err = mockmodel.StartChatRefusing("touch corral-shell.txt && exit 3")
			}
			if err != nil {
				t.Fatal(err)
			}
			defer model.Close()
			if r.lost {
				model.Close()
			}
			home, _ := os.UserHomeDir()
			private, _ := os.MkdirTemp(home, ".corral-record-")
			defer os.RemoveAll(private)
			os.Chmod(private, 0o700)
			agentHome, work := filepath.Join(private, "home"), filepath.Join(private, "work")
			os.MkdirAll(agentHome, 0o700)
			os.MkdirAll(work, 0o700)
			argv, env := r.argv(model.URL, agentHome, work)
			dir := filepath.Join(out, r.agent)
			os.MkdirAll(dir, 0o755)
			clean := func(b []byte) []byte { // the recording's folders, not this machine's
				return bytes.ReplaceAll(bytes.ReplaceAll(b, []byte(work), []byte("/work")), []byte(agentHome), []byte("/home"))
			}
			if r.acp != "" || r.relay != "" {
				pol, err := ParsePolicy("record", []byte(r.policy))
				if err != nil {
					t.Fatal(err)
				}
				tap := filepath.Join(private, "stdout")
				var evs []string
				agent, prompt := "acp", r.acp
				if r.relay != "" {
					agent, prompt = r.agent, r.relay
				}
				res, err := Run(context.Background(), Options{Agent: agent, Prompt: prompt, Policy: pol, Dir: work, Timeout: r.wait,
					Argv:    append([]string{"sh", "-c", `"$@" | tee "$TAP"`, "sh"}, argv...),
					Env:     append([]string{"HOME=" + agentHome, "NO_COLOR=1", "TAP=" + tap}, env...),
					OnEvent: func(e Event) { evs = append(evs, e.Summary()) }})
				t.Logf("%s: %+v %v\n%s", id, res, err, strings.Join(evs, "\n"))
				data, _ := os.ReadFile(tap)
				os.WriteFile(filepath.Join(dir, r.name+".jsonl"), clean(data), 0o644)
				os.WriteFile(filepath.Join(dir, r.name+".stderr"), clean([]byte(res.Stderr)), 0o644)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), r.wait)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Dir = work
			// The npm wrappers leave their native binary behind: the whole
			// group goes at the deadline.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.WaitDelay = 2 * time.Second
			cmd.Env = append(os.Environ(), append([]string{"HOME=" + agentHome, "NO_COLOR=1"}, env...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if r.stdin != "" {
				cmd.Stdin = strings.NewReader(r.stdin)
			}
			err = cmd.Run()
			t.Logf("%s: %v; %d bytes out, %d bytes err", id, err, stdout.Len(), stderr.Len())
			os.WriteFile(filepath.Join(dir, r.name+".jsonl"), clean(stdout.Bytes()), 0o644)
			os.WriteFile(filepath.Join(dir, r.name+".stderr"), clean(stderr.Bytes()), 0o644)
		})
	}
}
