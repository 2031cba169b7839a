package verify

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/agentdef"
	"github.com/corral-dev/corral/internal/lab/mockmodel"
)

// API is the model API an agent speaks.
type API string

const (
	APINone      API = ""                 // no model: a fake or scripted agent
	APIAnthropic API = "anthropic"        // Anthropic Messages with SSE
	APIGemini    API = "gemini"           // the Gemini API
	APIResponses API = "openai-responses" // OpenAI Responses
	APIChat      API = "openai-chat"      // OpenAI Chat Completions
)

// Profile is how verify runs one agent CLI.
type Profile struct {
	Name    string // as in --agent
	Rules   string // the pane's manifest ("" recognises it)
	Binary  string // found on PATH
	Package string // npm package, for the hint when it is missing
	// Version is the version this profile and the rules were checked
	// against (docs/agents.md).
	Version string
	API     API
	// Reports: the agent speaks OSC 7501, and its reports are the truth.
	Reports bool
	Args    []string
	// Ready is text on the agent's screen once it takes input.
	Ready string
	// Keys overrides the manifest's answers; KeyInterrupt defaults to Esc.
	Keys map[Key]string
	// Turns, for an agent that does not talk to the scripted model (the
	// fake agent), is what to type for each turn; {arg} is the step's Arg.
	Turns map[mockmodel.Step]string
	// Prelude answers first-start screens (text on screen → keys) before
	// the agent is ready: they are the agent's, not the scenario's.
	Prelude map[string]string
	// Skip lists scenario steps the agent cannot take, and why.
	Skip map[string]string
	// Home prepares the fresh HOME and returns the agent's environment.
	Home func(home, work, modelURL string) ([]string, error)
	// Latency is how long the scripted model waits before each answer
	// (0: at once), for an agent that finishes a turn against an instant
	// answer faster than its working screen can be read.
	Latency time.Duration
	// Scenario is the profile's own scenario (nil: the default), named
	// by its agent.toml.
	Scenario []Step
	// bad says why the profile cannot run (a name in agent.toml with no
	// Go part).
	bad error
}

// Profiles are the agents verify knows: the registry's
// (agents/NAME/agent.toml, where their versions are pinned), then the
// fake agent.
var Profiles = sync.OnceValue(func() []*Profile { return append(profilesOf(agentdef.BuiltIn()), fakeAgent) })

// homes are the Go parts of the profiles: agent.toml's [verify] home names
// one. A test fails when a name has none.
var homes = map[string]func(home, work, url string) ([]string, error){
	"claude-code": claudeHome,
	"codex":       codexHome,
	"copilot":     copilotHome,
	"crush":       crushHome,
	"gemini":      geminiHome,
	"opencode":    opencodeHome,
	"qwen-code":   qwenHome,
}

// profilesOf makes a profile of each agent of r.
func profilesOf(r *agentdef.Registry) []*Profile {
	var out []*Profile
	for _, a := range r.All() {
		v := a.Verify
		p := &Profile{Name: a.Name, Rules: a.Name, Binary: a.Binary, Package: a.Install.NPM, Version: a.Install.Verified,
			API: API(v.API), Reports: v.Reports, Args: v.Args, Ready: v.Ready, Prelude: v.Prelude, Skip: v.Skip, Latency: v.Latency}
		for k, keys := range v.Keys {
			if p.Keys == nil {
				p.Keys = map[Key]string{}
			}
			p.Keys[Key(k)] = keys
		}
		if v.Home != "" {
			p.Home = homes[v.Home]
			if p.Home == nil {
				p.Home = func(string, string, string) ([]string, error) {
					return nil, fmt.Errorf("%s: [verify] home %q has no Go part in internal/verify", a.Source, v.Home)
				}
			}
		}
		out = append(out, p)
		for _, vv := range v.Variants {
			q := *p
			q.Name, q.Args, q.Ready = vv.Name, vv.Args, vv.Ready
			if vv.Scenario != "" {
				q.Scenario = scenarios[vv.Scenario]
				if q.Scenario == nil {
					q.bad = fmt.Errorf("%s: [[verify.variant]] %q: scenario %q has no Go part in internal/verify's scenarios", a.Source, vv.Name, vv.Scenario)
				}
			}
			out = append(out, &q)
		}
	}
	return out
}

// fakeAgent is the built-in fake agent (`corral fake-agent`): it draws
// Claude Code's screens, so Claude Code's rules read it.
var fakeAgent = &Profile{Name: "fake-agent", Rules: "claude-code", Binary: "corral", Ready: "? for shortcuts",
	Turns: map[mockmodel.Step]string{mockmodel.StepShell: "ask", mockmodel.StepEdit: "ask",
		mockmodel.StepProse: "work 0.5", mockmodel.StepSlow: "work {arg}"},
	Skip: map[string]string{"interrupt": "the fake agent ignores keys while it works"}}

// ProfileFor returns the profile named, or the one whose binary command
// runs (the fake agent when its arguments say so).
func ProfileFor(name string, command []string) (*Profile, error) {
	if name != "" {
		for _, p := range Profiles() {
			if p.Name == name || p.Binary == name || p.Rules == name {
				return p, nil
			}
		}
		return nil, fmt.Errorf("unknown agent %q; verify knows %s", name, strings.Join(Names(), ", "))
	}
	if len(command) == 0 {
		return nil, fmt.Errorf("name an agent (--agent %s) or a command after --", strings.Join(Names(), "|"))
	}
	for _, a := range command {
		if a == "fake-agent" {
			return ProfileFor("fake-agent", nil)
		}
	}
	base := filepath.Base(command[0])
	for _, p := range Profiles() {
		if p.Binary == base {
			return p, nil
		}
	}
	return nil, fmt.Errorf("cannot tell which agent %s is; name it with --agent (%s)", base, strings.Join(Names(), ", "))
}

// Names lists the profiles' names.
func Names() []string {
	var out []string
	for _, p := range Profiles() {
		out = append(out, p.Name)
	}
	return out
}

// turnText is what to type for a step; ok is false when the agent cannot
// take that turn.
func (p *Profile) turnText(s Step, work string) (string, bool) {
	if s.Turn == "" {
		return "", true
	}
	if p.Turns != nil {
		t, ok := p.Turns[s.Turn]
		return strings.ReplaceAll(t, "{arg}", s.Arg), ok
	}
	if p.API == APINone || p.Home == nil {
		return "", false
	}
	return s.text(work), true
}

// testKey is the scripted model's API key: a test value, never a real one.
const testKey = "sk-ant-test-0123456789abcdefghijklmnopqrstuvwxyz"

// claudeHome prepares Claude Code's HOME: onboarding done, the test key
// approved, the work folder trusted (protocols.md §7).
func claudeHome(home, work, url string) ([]string, error) {
	cfg, _ := json.Marshal(map[string]any{
		"hasCompletedOnboarding": true, "theme": "dark",
		"customApiKeyResponses": map[string]any{"approved": []string{testKey[len(testKey)-20:]}, "rejected": []string{}},
		"projects":              map[string]any{work: map[string]any{"hasTrustDialogAccepted": true}},
	})
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), cfg, 0o600); err != nil {
		return nil, err
	}
	return []string{"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=" + testKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1"}, nil
}

// geminiHome prepares Gemini CLI's HOME: API-key auth, no folder-trust
// dialog, and a user policy that lets `sleep` run without a prompt (a slow
// tool call). The deprecated tools.allowed setting would do that too, but
// with it Gemini CLI 0.61.0 denies every other shell command unasked.
func geminiHome(home, work, url string) ([]string, error) {
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(filepath.Join(dir, "policies"), 0o700); err != nil {
		return nil, err
	}
	settings := `{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}}}`
	policy := "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"sleep\"\ndecision = \"allow\"\npriority = 100\n"
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(settings), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "policies", "corral-verify.toml"), []byte(policy), 0o600); err != nil {
		return nil, err
	}
	return []string{"GEMINI_API_KEY=test-key", "GOOGLE_GEMINI_BASE_URL=" + url}, nil
}

// pause in a profile's keys splits them into two presses a moment apart.
const pause = "{pause}"

// codexHome points Codex at the scripted Responses server with a model it
// has no metadata for (a known one opens an upgrade screen and sends its
// tools another way) and trusts the work folder.
func codexHome(home, work, url string) ([]string, error) {
	dir := filepath.Join(home, ".codex")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`model_provider = "mock"
model = "gpt-5.1-codex"

[model_providers.mock]
name = "mock"
base_url = %q
env_key = "MOCK_API_KEY"
wire_api = "responses"

[projects.%q]
trust_level = "trusted"
`, url+"/v1", work)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	return []string{"CODEX_HOME=" + dir, "MOCK_API_KEY=test-key"}, nil
}

// qwenHome points Qwen Code at the scripted Chat Completions server,
// keeps it from updating itself at start, and lets the slow step's
// `echo slow; sleep 30` run unasked.
func qwenHome(home, work, url string) ([]string, error) {
	dir := filepath.Join(home, ".qwen")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"general": {"enableAutoUpdate": false}, "tools": {"allowed": ["run_shell_command(echo)", "run_shell_command(sleep)"]}, "$version": 4}`), 0o600); err != nil {
		return nil, err
	}
	return []string{"OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=test-key", "OPENAI_MODEL=mock-model"}, nil
}

// opencodeHome gives opencode a provider on the scripted server, makes it
// ask before edits and shell commands (it asks nothing by default) but
// the slow step's, and turns on its question tool.
func opencodeHome(home, work, url string) ([]string, error) {
	dir := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cfg, _ := json.Marshal(map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{"mock": map[string]any{"npm": "@ai-sdk/openai-compatible", "name": "Mock",
			"options": map[string]any{"baseURL": url + "/v1", "apiKey": "test-key"},
			"models":  map[string]any{"mock-model": map[string]any{"name": "Mock Model", "tool_call": true}}}},
		"model": "mock/mock-model", "small_model": "mock/mock-model",
		"permission": map[string]any{"edit": "ask", "bash": map[string]any{"*": "ask", "echo *": "allow", "sleep *": "allow"}}, "autoupdate": false,
	})
	if err := os.WriteFile(filepath.Join(dir, "opencode.json"), cfg, 0o600); err != nil {
		return nil, err
	}
	return []string{"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_ENABLE_QUESTION_TOOL=1"}, nil
}

// copilotHome uses Copilot CLI's custom-provider mode on the scripted
// Chat Completions server: no GitHub sign-in.
func copilotHome(home, work, url string) ([]string, error) {
	return []string{"COPILOT_PROVIDER_BASE_URL=" + url + "/v1", "COPILOT_PROVIDER_API_KEY=test-key", "COPILOT_MODEL=gpt-4.1",
		"COPILOT_OFFLINE=true", "COPILOT_AUTO_UPDATE=false"}, nil
}

// crushHome gives Crush one provider on the scripted Chat Completions
// server and nothing else: no provider list fetched, no metrics, no
// language servers, its data inside the fresh HOME.
func crushHome(home, work, url string) ([]string, error) {
	dir := filepath.Join(home, ".config", "crush")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	model := map[string]any{"id": "mock-model", "name": "Mock Model", "context_window": 128000, "default_max_tokens": 4096}
	cfg, _ := json.Marshal(map[string]any{
		"providers": map[string]any{"mock": map[string]any{"type": "openai-compat", "name": "Mock", "base_url": url + "/v1",
			"api_key": "test-key", "discover_models": false, "models": []any{model}}},
		"models": map[string]any{"large": map[string]any{"model": "mock-model", "provider": "mock"},
			"small": map[string]any{"model": "mock-model", "provider": "mock"}},
		"options": map[string]any{"disable_provider_auto_update": true, "disable_default_providers": true,
			"disable_metrics": true, "auto_lsp": false, "notifications": "disabled"},
	})
	if err := os.WriteFile(filepath.Join(dir, "crush.json"), cfg, 0o600); err != nil {
		return nil, err
	}
	return []string{"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"CRUSH_DISABLE_PROVIDER_AUTO_UPDATE=1", "CRUSH_DISABLE_METRICS=1", "DO_NOT_TRACK=1"}, nil
}
