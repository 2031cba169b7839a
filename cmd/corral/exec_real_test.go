package main

import (
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

// TestRealExec runs the real Codex, Gemini CLI and Qwen Code headless with
// corral exec against the scripted model servers on loopback, and checks
// each run's readable output and exit status: a plain turn, a tool turn,
// permission requests answered by a policy over ACP, a timeout, a model
// server that is gone, a folder Codex does not trust. Opt-in: each agent
// runs when its CLI is found ($CORRAL_CODEX, $CORRAL_GEMINI, $CORRAL_QWEN,
// or on PATH) and is skipped otherwise. docs/headless.md has the table.
func TestRealExec(t *testing.T) {
	type tcase struct {
		name string
		// server: "responses", "responses-unescalated", "gemini", "chat";
		// lost: the server is closed before the run.
		server string
		lost   bool
		// interrupt: corral exec gets SIGINT once its output shows a tool call.
		interrupt bool
		// answer: corral answer JOB ANSWER once the output shows a permission request.
		answer string
		flags  []string
		argv   func(bin string) []string
		code   int      // -1: any non-zero status
		want   []string // in stdout and stderr together
		not    []string
	}
	allowTouch := "[[rule]]\ntool = \"execute|run_shell_command\"\ninput = \"^touch \"\ndecision = \"allow\"\n"
	agents := []struct {
		name, envVar, pkg string
		setup             func(home, url string) []string // writes config, returns --env values
		cases             []tcase
	}{
		{name: "codex", envVar: "CORRAL_CODEX", pkg: "@openai/codex",
			setup: func(home, url string) []string {
				cfg := fmt.Sprintf("model = \"gpt-5.1-codex\"\nmodel_provider = \"mock\"\n[model_providers.mock]\nname = \"mock\"\nbase_url = %q\nenv_key = \"MOCK_API_KEY\"\nwire_api = \"responses\"\n", url+"/v1")
				os.MkdirAll(filepath.Join(home, ".codex"), 0o700)
				os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(cfg), 0o600)
				return []string{"CODEX_HOME=" + filepath.Join(home, ".codex"), "MOCK_API_KEY=test-key"}
			},
			cases: []tcase{
				{name: "plain", server: "responses", argv: func(b string) []string {
					return []string{b, "exec", "--json", "--skip-git-repo-check", "corral:prose say hello"}
				}, want: []string{"assistant: Hello.", "done: success", "tokens in"}, not: []string{"\nother", "error"}},
				{name: "tool", server: "responses-unescalated", argv: func(b string) []string {
					return []string{b, "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write", "corral:shell run it"}
				}, want: []string{"tool shell: ", "result (failed, exit 3)", "done: success"}},
				{name: "edit", server: "responses", argv: func(b string) []string {
					return []string{b, "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write", "corral:edit write it"}
				}, want: []string{"tool edit: add ", "corral-mock.txt", "done: success"}},
				{name: "untrusted", server: "responses", argv: func(b string) []string {
					return []string{b, "exec", "--json", "corral:prose say hello"}
				}, code: 1, want: []string{"exited without a result event", "Not inside a trusted directory"}},
				{name: "timeout", server: "responses-unescalated", flags: []string{"--timeout", "4s"}, argv: func(b string) []string {
					return []string{b, "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write", "corral:slow wait"}
				}, code: 124, want: []string{"tool shell: ", "timed out after 4s"}},
				{name: "refused", server: "responses-unescalated", argv: func(b string) []string {
					return []string{b, "exec", "--json", "--skip-git-repo-check", "corral-fail say hello"}
				}, code: -1, want: []string{"the result is an error: turn.failed: the mock model refuses this request"}},
				{name: "interrupt", server: "responses-unescalated", interrupt: true, argv: func(b string) []string {
					return []string{b, "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write", "corral:slow wait"}
				}, code: 130, want: []string{"tool shell: ", "was killed"}},
				{name: "lost", server: "responses", lost: true, flags: []string{"--timeout", "8s"}, argv: func(b string) []string {
					return []string{b, "exec", "--json", "--skip-git-repo-check", "corral:prose say hello"}
				}, code: 124, want: []string{"retrying the model API: Reconnecting", "timed out"}, not: []string{"error: error"}},
			}},
		{name: "gemini", envVar: "CORRAL_GEMINI", pkg: "@google/gemini-cli",
			setup: func(home, url string) []string {
				os.MkdirAll(filepath.Join(home, ".gemini"), 0o700)
				os.WriteFile(filepath.Join(home, ".gemini", "settings.json"),
					[]byte(`{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}}}`), 0o600)
				return []string{"GEMINI_API_KEY=test-key", "GOOGLE_GEMINI_BASE_URL=" + url}
			},
			cases: []tcase{
				{name: "plain", server: "gemini", argv: func(b string) []string {
					return []string{b, "-p", "corral:prose say hello", "--output-format", "stream-json"}
				}, want: []string{"assistant: Hello. This is a short answer from the mock model.\n", "done: success, ", " ms, "}},
				{name: "tool", server: "gemini", argv: func(b string) []string {
					return []string{b, "-p", "corral:shell run it", "--output-format", "stream-json", "--yolo"}
				}, want: []string{"tool run_shell_command: touch", "result (failed, exit 3)", "1 tool calls"}},
				{name: "acp-allowed", server: "gemini", flags: []string{"--agent", "acp", "--prompt", "corral:shell run it", "--policy", "POLICY"},
					argv: func(b string) []string { return []string{b, "--experimental-acp"} },
					want: []string{"allowed execute: touch corral-shell.txt && exit 3", "done: end_turn"}},
				{name: "acp-denied", server: "gemini", flags: []string{"--agent", "acp", "--prompt", "corral:edit write it", "--policy", "POLICY"},
					argv: func(b string) []string { return []string{b, "--experimental-acp"} },
					want: []string{"denied edit: ", "no rule matched", "done: end_turn"}},
				{name: "timeout", server: "gemini", flags: []string{"--timeout", "4s"}, argv: func(b string) []string {
					return []string{b, "-p", "corral:slow wait", "--output-format", "stream-json", "--yolo"}
				}, code: 124, want: []string{"timed out after 4s"}},
				{name: "refused", server: "gemini", argv: func(b string) []string {
					return []string{b, "-p", "corral-fail say hello", "--output-format", "stream-json"}
				}, code: -1, want: []string{"the result is an error: error: API Error: the mock model refuses this request"}},
				{name: "interrupt", server: "gemini", interrupt: true, argv: func(b string) []string {
					return []string{b, "-p", "corral:slow wait", "--output-format", "stream-json", "--yolo"}
				}, code: 130, want: []string{"tool run_shell_command: ", "was killed"}},
				{name: "lost", server: "gemini", lost: true, flags: []string{"--timeout", "15s", "--stall", "5s"}, argv: func(b string) []string {
					return []string{b, "-p", "corral:prose say hello", "--output-format", "stream-json"}
				}, code: 124, want: []string{"retrying the model API: Attempt 1 failed", "timed out"}},
			}},
		{name: "qwen", envVar: "CORRAL_QWEN", pkg: "@qwen-code/qwen-code",
			setup: func(home, url string) []string {
				os.MkdirAll(filepath.Join(home, ".qwen"), 0o700)
				os.WriteFile(filepath.Join(home, ".qwen", "settings.json"), []byte(`{"general":{"enableAutoUpdate":false},"$version":4}`), 0o600)
				return []string{"OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=test-key", "OPENAI_MODEL=mock-model"}
			},
			cases: []tcase{
				{name: "plain", server: "chat", argv: func(b string) []string {
					return []string{b, "-p", "corral:prose say hello", "--output-format", "stream-json"}
				}, want: []string{"assistant: Hello.", "done: success, 1 turns"}},
				// The wrong --agent: the stream says it is Claude's format.
				{name: "wrong-agent", server: "chat", flags: []string{"--agent", "gemini"}, argv: func(b string) []string {
					return []string{b, "-p", "corral:prose say hello", "--output-format", "stream-json"}
				}, want: []string{"warning: the stream is in claude's format", "done: success"}},
				{name: "tool", server: "chat", argv: func(b string) []string {
					return []string{b, "-p", "corral:shell run it", "--output-format", "stream-json", "--yolo"}
				}, want: []string{"tool run_shell_command: ", "result (failed, exit 3)", "done: success, 2 turns"}},
				{name: "relay-policy-allowed", server: "chat", flags: []string{"--policy", "POLICY"}, argv: func(b string) []string {
					return []string{b, "-p", "corral:shell run it", "--output-format", "stream-json"}
				}, want: []string{"permission? run_shell_command: touch", "allowed run_shell_command", "result (failed, exit 3)", "done: success"}},
				{name: "relay-policy-denied", server: "chat", flags: []string{"--policy", "POLICY"}, argv: func(b string) []string {
					return []string{b, "-p", "corral:edit write it", "--output-format", "stream-json"}
				}, want: []string{"permission? write_file: ", "denied write_file", "done: success"}},
				{name: "relay-answered-yes", server: "chat", answer: "yes", argv: func(b string) []string {
					return []string{b, "-p", "corral:shell run it", "--output-format", "stream-json"}
				}, want: []string{"permission? run_shell_command: touch", "allowed run_shell_command", "(corral answer yes)", "done: success"}},
				{name: "relay-answered-no", server: "chat", answer: "no", argv: func(b string) []string {
					return []string{b, "-p", "corral:shell run it", "--output-format", "stream-json"}
				}, want: []string{"denied run_shell_command", "(corral answer no)", "done: success"}},
				{name: "acp-allowed", server: "chat", flags: []string{"--agent", "acp", "--prompt", "corral:shell run it", "--policy", "POLICY"},
					argv: func(b string) []string { return []string{b, "--acp"} },
					want: []string{"allowed execute: touch corral-shell.txt && exit 3", "assistant: Done. The tool ran.", "done: end_turn"}},
				{name: "acp-denied", server: "chat", flags: []string{"--agent", "acp", "--prompt", "corral:edit write it", "--policy", "POLICY"},
					argv: func(b string) []string { return []string{b, "--acp"} },
					want: []string{"denied edit: ", "done: end_turn"}},
				{name: "timeout", server: "chat", flags: []string{"--timeout", "4s"}, argv: func(b string) []string {
					return []string{b, "-p", "corral:slow wait", "--output-format", "stream-json", "--yolo"}
				}, code: 124, want: []string{"timed out after 4s"}},
				{name: "refused", server: "chat", argv: func(b string) []string {
					return []string{b, "-p", "corral-fail say hello", "--output-format", "stream-json"}
				}, code: 1, want: []string{"the result is an error: api_error: [API Error: 400 the mock model refuses this request"}},
				{name: "interrupt", server: "chat", interrupt: true, argv: func(b string) []string {
					return []string{b, "-p", "corral:slow wait", "--output-format", "stream-json", "--yolo"}
				}, code: 130, want: []string{"tool run_shell_command: ", "was killed"}},
				{name: "lost", server: "chat", lost: true, flags: []string{"--timeout", "30s"}, argv: func(b string) []string {
					return []string{b, "-p", "corral:prose say hello", "--output-format", "stream-json"}
				}, code: 1, want: []string{"error: api_error [API Error: Connection error"}},
			}},
	}
	for _, a := range agents {
		t.Run(a.name, func(t *testing.T) {
			bin := realCLI(t, a.envVar, a.name, a.pkg)
			e := newEnv(t)
			home, _ := os.UserHomeDir()
			private, err := os.MkdirTemp(home, ".corral-exec-test-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(private) })
			os.Chmod(private, 0o700)
			policy := filepath.Join(private, "policy.toml")
			os.WriteFile(policy, []byte(allowTouch), 0o600)
			for _, c := range a.cases {
				t.Run(c.name, func(t *testing.T) {
					var model *mockmodel.Server
					var err error
					switch c.server {
					case "responses":
						model, err = mockmodel.StartResponses("touch corral-shell.txt && exit 3")
					case "responses-unescalated":
						model, err = mockmodel.StartResponsesUnescalated("touch corral-shell.txt && exit 3")
					case "gemini":
						model, err = mockmodel.StartGeminiSteps("touch corral-shell.txt && exit 3")
					default:
						model, err = mockmodel.StartChatRefusing("touch corral-shell.txt && exit 3")
					}
					if err != nil {
						t.Fatal(err)
					}
					defer model.Close()
					if c.lost {
						model.Close()
					}
					agentHome, work := filepath.Join(private, c.name, "home"), filepath.Join(private, c.name, "work")
					os.MkdirAll(agentHome, 0o700)
					os.MkdirAll(work, 0o700)
					args := []string{"exec", "--name", a.name + "-" + c.name}
					for _, f := range c.flags {
						args = append(args, strings.ReplaceAll(f, "POLICY", policy))
					}
					env := append([]string{"HOME=" + agentHome, "NO_COLOR=1"}, a.setup(agentHome, model.URL)...)
					for _, v := range env {
						args = append(args, "--env", v)
					}
					args = append(append(args, "--"), c.argv(bin)...)
					cmd := exec.Command(corralBin, args...)
					cmd.Env, cmd.Dir = e.vars, work
					var out lockedBuffer
					cmd.Stdout, cmd.Stderr = &out, &out
					start := time.Now()
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					done := make(chan error, 1)
					go func() { done <- cmd.Wait() }()
					if c.answer != "" {
						for !strings.Contains(out.String(), "permission? ") {
							select {
							case err := <-done:
								t.Fatalf("corral exec ended (%v) before the permission request:\n%s", err, out.String())
							case <-time.After(50 * time.Millisecond):
							}
						}
						e.must("answer", a.name+"-"+c.name, c.answer)
					}
					if c.interrupt {
						for !strings.Contains(out.String(), "tool ") {
							select {
							case err := <-done:
								t.Fatalf("corral exec ended (%v) before the tool call:\n%s", err, out.String())
							case <-time.After(50 * time.Millisecond):
							}
						}
						cmd.Process.Signal(syscall.SIGINT)
					}
					select {
					case err = <-done:
					case <-time.After(120 * time.Second):
						syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
						t.Fatalf("corral exec did not end:\n%s", out.String())
					}
					code := 0
					if ee, ok := err.(*exec.ExitError); ok {
						code = ee.ExitCode()
					}
					t.Logf("%s/%s: exit %d in %v\n%s", a.name, c.name, code, time.Since(start).Round(100*time.Millisecond), out.String())
					if code != c.code && !(c.code == -1 && code != 0) {
						t.Errorf("exit status %d, want %d", code, c.code)
					}
					for _, w := range c.want {
						if !strings.Contains(out.String(), w) {
							t.Errorf("output lacks %q", w)
						}
					}
					for _, n := range c.not {
						if strings.Contains(out.String(), n) {
							t.Errorf("output has %q", n)
						}
					}
				})
			}
		})
	}
}
