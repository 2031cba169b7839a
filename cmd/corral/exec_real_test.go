package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-dev/corral/internal/verify"
)

// TestRealExec runs `corral verify --headless`'s cases (internal/verify,
// HeadlessAgents) for every installed agent with a headless mode: the
// real CLI as a corral exec job against the scripted model servers on
// loopback, each case's exit status and output checked. Opt-in: each
// agent runs when its CLI is found ($CORRAL_CLAUDE, $CORRAL_CODEX,
// $CORRAL_GEMINI, $CORRAL_QWEN, or on PATH) and is skipped otherwise.
// docs/agents.md (Headless) has the table.
func TestRealExec(t *testing.T) {
	t.Parallel()
	envVars := map[string]string{"claude-code": "CORRAL_CLAUDE", "codex": "CORRAL_CODEX", "gemini": "CORRAL_GEMINI", "qwen-code": "CORRAL_QWEN"}
	for _, a := range verify.HeadlessAgents {
		t.Run(a.Profile, func(t *testing.T) {
			p, err := verify.ProfileFor(a.Profile, nil)
			if err != nil {
				t.Fatal(err)
			}
			bin := realCLI(t, envVars[a.Profile], a.BinaryName(), p.Package)
			agent := *a
			if a.Profile == "codex" {
				// A folder Codex does not trust: it ends without a result.
				agent.Cases = append(agent.Cases[:len(agent.Cases):len(agent.Cases)], verify.HeadlessCase{Name: "untrusted", Server: "responses",
					Args: []string{"exec", "--json", "corral:prose say hello"}, Code: 1,
					Want: []string{"exited without a result event", "Not inside a trusted directory"}})
				agent.Home = untrustingCodexHome
			}
			res, err := verify.RunHeadless(context.Background(), verify.HeadlessOptions{Agent: &agent, Command: bin, Exe: corralBin})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range res.Cases {
				t.Logf("%s/%s: exit %d in %.1fs\n%s", a.Profile, c.Name, c.Exit, c.Seconds, c.Output)
				if !c.Right {
					t.Errorf("%s: exit %d (want %d), lacks %q, has %q", c.Name, c.Exit, c.Code, c.Missing, c.Unwant)
				}
			}
		})
	}
}

// untrustingCodexHome points Codex at the scripted server without
// trusting the work folder: the cases pass --skip-git-repo-check, but
// for the untrusted one.
func untrustingCodexHome(home, work, url string) ([]string, error) {
	dir := filepath.Join(home, ".codex")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf("model = \"gpt-5.1-codex\"\nmodel_provider = \"mock\"\n[model_providers.mock]\nname = \"mock\"\nbase_url = %q\nenv_key = \"MOCK_API_KEY\"\nwire_api = \"responses\"\n", url+"/v1")
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	return []string{"CODEX_HOME=" + dir, "MOCK_API_KEY=test-key"}, nil
}
