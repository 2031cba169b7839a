package verify

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/lab/mockmodel"
)

// HeadlessCase is one headless run of an agent through the daemon's job
// path (corral exec) against a scripted model server, and what corral
// must make of it.
type HeadlessCase struct {
	Name string
	// Server is the scripted model server: "messages", "responses",
	// "responses-unescalated", "gemini", "chat" ("" none).
	Server string
	// Lost closes the server before the run: the model API is gone.
	Lost bool
	// Interrupt sends corral exec SIGINT once its output shows a tool call.
	Interrupt bool
	// Answer is given with corral answer once the output shows a
	// permission request.
	Answer string
	// Flags go to corral exec; POLICY stands for the policy file.
	Flags []string
	// Args follow the agent's binary.
	Args []string
	// Expect says the expected outcome in words: state and key event.
	Expect string
	Code   int      // the exit status; -1: any non-zero one
	Want   []string // in corral exec's output, the first being the key event
	Not    []string // never in it
}

// HeadlessAgent is an agent with a headless mode and its cases.
type HeadlessAgent struct {
	Profile string // the pane profile whose binary, version and home it shares
	Binary  string // "" the profile's
	// Home prepares the fresh HOME ("" the profile's).
	Home  func(home, work, modelURL string) ([]string, error)
	Cases []HeadlessCase
}

// HeadlessPolicy answers the policy cases: it allows `touch` and denies
// everything else (nothing matches).
const HeadlessPolicy = "[[rule]]\ntool = \"execute|run_shell_command|Bash\"\ninput = '^(touch [^ ]+|exit [0-9]+)$'\noperators = [\"&&\"]\ndecision = \"allow\"\n"

// headlessCommand is the shell step's command: it fails with a status of
// its own, so the tool result shows it.
const headlessCommand = "touch corral-shell.txt && exit 3"

func claudeP(prompt string, more ...string) []string {
	return append([]string{"-p", prompt, "--output-format", "stream-json", "--verbose"}, more...)
}

func streamP(prompt string, more ...string) []string {
	return append([]string{"-p", prompt, "--output-format", "stream-json"}, more...)
}

func codexExec(more ...string) []string {
	return append([]string{"exec", "--json", "--skip-git-repo-check"}, more...)
}

// HeadlessAgents are the agents with a headless mode and the cases that
// pin down what corral makes of each (docs/agents.md, Headless).
var HeadlessAgents = []*HeadlessAgent{
	{Profile: "claude-code", Cases: []HeadlessCase{
		{Name: "plain", Server: "messages", Args: claudeP("corral:prose say hello"),
			Expect: "done, exit 0", Want: []string{"done: success", "assistant: "}},
		{Name: "relay-answered-yes", Server: "messages", Answer: "yes", Args: claudeP("corral:shell run it", "--permission-mode", "default"),
			Expect: "blocked, then allowed by the answer; done, exit 0", Want: []string{"(corral answer yes)", "allowed Bash: touch", "done: success"}},
		{Name: "relay-answered-no", Server: "messages", Answer: "no", Args: claudeP("corral:shell run it", "--permission-mode", "default"),
			Expect: "blocked, then denied by the answer; done, exit 0", Want: []string{"(corral answer no)", "denied Bash", "done: success"}},
		{Name: "relay-policy-allowed", Server: "messages", Flags: []string{"--policy", "POLICY"}, Args: claudeP("corral:shell run it", "--permission-mode", "default"),
			Expect: "allowed by the policy; done, exit 0", Want: []string{"allowed Bash: touch", "done: success"}},
		{Name: "relay-policy-denied", Server: "messages", Flags: []string{"--policy", "POLICY"}, Args: claudeP("corral:edit write it", "--permission-mode", "default"),
			Expect: "denied by the policy; done, exit 0", Want: []string{"denied Write: ", "done: success"}},
		{Name: "timeout", Server: "messages", Flags: []string{"--timeout", "4s"}, Args: claudeP("corral:slow wait", "--permission-mode", "default", "--allowedTools", "Bash"),
			Expect: "killed at the timeout, exit 124", Code: 124, Want: []string{"timed out after 4s"}},
		{Name: "interrupt", Server: "messages", Interrupt: true, Args: claudeP("corral:slow wait", "--permission-mode", "default", "--allowedTools", "Bash"),
			Expect: "interrupted during the tool call, exit 130", Code: 130, Want: []string{"was killed", "tool Bash: "}},
		{Name: "lost", Server: "messages", Lost: true, Flags: []string{"--timeout", "10s"}, Args: claudeP("corral:prose say hello"),
			Expect: "a retry, then killed at the timeout, exit 124", Code: 124, Want: []string{"retrying the model API: attempt 1/", "timed out"}},
	}},
	{Profile: "codex", Cases: []HeadlessCase{
		{Name: "plain", Server: "responses", Args: codexExec("corral:prose say hello"),
			Expect: "done, exit 0", Want: []string{"done: success", "assistant: Hello.", "tokens in"}, Not: []string{"\nother", "error"}},
		{Name: "tool", Server: "responses-unescalated", Args: codexExec("--sandbox", "workspace-write", "corral:shell run it"),
			Expect: "done, exit 0; the tool's failure shown", Want: []string{"result (failed, exit 3)", "tool shell: ", "done: success"}},
		{Name: "edit", Server: "responses", Args: codexExec("--sandbox", "workspace-write", "corral:edit write it"),
			Expect: "done, exit 0; the edit shown", Want: []string{"tool edit: add ", "corral-mock.txt", "done: success"}},
		{Name: "timeout", Server: "responses-unescalated", Flags: []string{"--timeout", "4s"}, Args: codexExec("--sandbox", "workspace-write", "corral:slow wait"),
			Expect: "killed at the timeout, exit 124", Code: 124, Want: []string{"timed out after 4s", "tool shell: "}},
		{Name: "refused", Server: "responses-unescalated", Args: codexExec(mockmodel.FailWord + " say hello"),
			Expect: "error, non-zero exit", Code: -1, Want: []string{"the result is an error: turn.failed: the mock model refuses this request"}},
		{Name: "interrupt", Server: "responses-unescalated", Interrupt: true, Args: codexExec("--sandbox", "workspace-write", "corral:slow wait"),
			Expect: "interrupted during the tool call, exit 130", Code: 130, Want: []string{"was killed", "tool shell: "}},
		{Name: "lost", Server: "responses", Lost: true, Flags: []string{"--timeout", "8s"}, Args: codexExec("corral:prose say hello"),
			Expect: "a retry, then killed at the timeout, exit 124", Code: 124, Want: []string{"retrying the model API: Reconnecting", "timed out"}, Not: []string{"error: error"}},
	}},
	{Profile: "gemini", Home: geminiHeadlessHome, Cases: []HeadlessCase{
		{Name: "plain", Server: "gemini", Args: streamP("corral:prose say hello"),
			Expect: "done, exit 0", Want: []string{"done: success, ", "assistant: Hello. This is a short answer from the mock model.\n"}},
		{Name: "tool", Server: "gemini", Args: streamP("corral:shell run it", "--yolo"),
			Expect: "done, exit 0; the tool's failure shown", Want: []string{"result (failed, exit 3)", "tool run_shell_command: touch", "1 tool calls"}},
		{Name: "acp-policy-allowed", Server: "gemini", Flags: []string{"--agent", "acp", "--prompt", "corral:shell run it", "--policy", "POLICY"},
			Args: []string{"--experimental-acp"}, Expect: "allowed by the policy; done, exit 0", Want: []string{"allowed execute: touch corral-shell.txt && exit 3", "done: end_turn"}},
		{Name: "acp-policy-denied", Server: "gemini", Flags: []string{"--agent", "acp", "--prompt", "corral:edit write it", "--policy", "POLICY"},
			Args: []string{"--experimental-acp"}, Expect: "denied by the policy; done, exit 0", Want: []string{"denied edit: ", "no rule matched", "done: end_turn"}},
		{Name: "timeout", Server: "gemini", Flags: []string{"--timeout", "4s"}, Args: streamP("corral:slow wait", "--yolo"),
			Expect: "killed at the timeout, exit 124", Code: 124, Want: []string{"timed out after 4s"}},
		{Name: "refused", Server: "gemini", Args: streamP(mockmodel.FailWord + " say hello"),
			Expect: "error, non-zero exit", Code: -1, Want: []string{"the result is an error: error: API Error: the mock model refuses this request"}},
		{Name: "interrupt", Server: "gemini", Interrupt: true, Args: streamP("corral:slow wait", "--yolo"),
			Expect: "interrupted during the tool call, exit 130", Code: 130, Want: []string{"was killed", "tool run_shell_command: "}},
		{Name: "lost", Server: "gemini", Lost: true, Flags: []string{"--timeout", "15s", "--stall", "5s"}, Args: streamP("corral:prose say hello"),
			Expect: "a retry, then killed at the timeout, exit 124", Code: 124, Want: []string{"retrying the model API: Attempt 1 failed", "timed out"}},
	}},
	{Profile: "qwen-code", Home: qwenHeadlessHome, Cases: []HeadlessCase{
		{Name: "plain", Server: "chat", Args: streamP("corral:prose say hello"),
			Expect: "done, exit 0", Want: []string{"done: success, 1 turns", "assistant: Hello."}},
		// The wrong --agent: the stream says it is Claude's format.
		{Name: "wrong-agent", Server: "chat", Flags: []string{"--agent", "gemini"}, Args: streamP("corral:prose say hello"),
			Expect: "a warning on the format; done, exit 0", Want: []string{"warning: the stream is in claude's format", "done: success"}},
		{Name: "tool", Server: "chat", Args: streamP("corral:shell run it", "--yolo"),
			Expect: "done, exit 0; the tool's failure shown", Want: []string{"result (failed, exit 3)", "tool run_shell_command: ", "done: success, 2 turns"}},
		{Name: "relay-policy-allowed", Server: "chat", Flags: []string{"--policy", "POLICY"}, Args: streamP("corral:shell run it"),
			Expect: "allowed by the policy; done, exit 0", Want: []string{"allowed run_shell_command", "permission? run_shell_command: touch", "result (failed, exit 3)", "done: success"}},
		{Name: "relay-policy-denied", Server: "chat", Flags: []string{"--policy", "POLICY"}, Args: streamP("corral:edit write it"),
			Expect: "denied by the policy; done, exit 0", Want: []string{"denied write_file", "permission? write_file: ", "done: success"}},
		{Name: "relay-answered-yes", Server: "chat", Answer: "yes", Args: streamP("corral:shell run it"),
			Expect: "blocked, then allowed by the answer; done, exit 0", Want: []string{"(corral answer yes)", "permission? run_shell_command: touch", "allowed run_shell_command", "done: success"}},
		{Name: "relay-answered-no", Server: "chat", Answer: "no", Args: streamP("corral:shell run it"),
			Expect: "blocked, then denied by the answer; done, exit 0", Want: []string{"(corral answer no)", "denied run_shell_command", "done: success"}},
		{Name: "acp-policy-allowed", Server: "chat", Flags: []string{"--agent", "acp", "--prompt", "corral:shell run it", "--policy", "POLICY"},
			Args: []string{"--acp"}, Expect: "allowed by the policy; done, exit 0", Want: []string{"allowed execute: touch corral-shell.txt && exit 3", "assistant: Done. The tool ran.", "done: end_turn"}},
		{Name: "acp-policy-denied", Server: "chat", Flags: []string{"--agent", "acp", "--prompt", "corral:edit write it", "--policy", "POLICY"},
			Args: []string{"--acp"}, Expect: "denied by the policy; done, exit 0", Want: []string{"denied edit: ", "done: end_turn"}},
		{Name: "timeout", Server: "chat", Flags: []string{"--timeout", "4s"}, Args: streamP("corral:slow wait", "--yolo"),
			Expect: "killed at the timeout, exit 124", Code: 124, Want: []string{"timed out after 4s"}},
		{Name: "refused", Server: "chat", Args: streamP(mockmodel.FailWord + " say hello"),
			Expect: "error, exit 1", Code: 1, Want: []string{"the result is an error: api_error: [API Error: 400 the mock model refuses this request"}},
		{Name: "interrupt", Server: "chat", Interrupt: true, Args: streamP("corral:slow wait", "--yolo"),
			Expect: "interrupted during the tool call, exit 130", Code: 130, Want: []string{"was killed", "tool run_shell_command: "}},
		{Name: "lost", Server: "chat", Lost: true, Flags: []string{"--timeout", "30s"}, Args: streamP("corral:prose say hello"),
			Expect: "error, exit 1", Code: 1, Want: []string{"error: api_error [API Error: Connection error"}},
	}},
}

// geminiHeadlessHome is Gemini CLI's home without the pane scenario's
// policy file: a headless run asks nothing, and ACP asks corral.
func geminiHeadlessHome(home, work, url string) ([]string, error) {
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	settings := `{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}}}`
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(settings), 0o600); err != nil {
		return nil, err
	}
	return []string{"GEMINI_API_KEY=test-key", "GOOGLE_GEMINI_BASE_URL=" + url}, nil
}

// qwenHeadlessHome is Qwen Code's home without the pane scenario's
// allowed tools.
func qwenHeadlessHome(home, work, url string) ([]string, error) {
	dir := filepath.Join(home, ".qwen")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"general":{"enableAutoUpdate":false},"$version":4}`), 0o600); err != nil {
		return nil, err
	}
	return []string{"OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=test-key", "OPENAI_MODEL=mock-model"}, nil
}

// HeadlessAgentFor returns the headless agent of a profile name.
func HeadlessAgentFor(name string) (*HeadlessAgent, error) {
	p, err := ProfileFor(name, nil)
	if err != nil {
		return nil, err
	}
	for _, a := range HeadlessAgents {
		if a.Profile == p.Name {
			return a, nil
		}
	}
	var names []string
	for _, a := range HeadlessAgents {
		names = append(names, a.Profile)
	}
	return nil, fmt.Errorf("%s has no headless mode verify knows; headless agents: %s", p.Name, strings.Join(names, ", "))
}

// BinaryName is the agent's binary, looked for on PATH.
func (a *HeadlessAgent) BinaryName() string {
	if a.Binary != "" {
		return a.Binary
	}
	if p, err := ProfileFor(a.Profile, nil); err == nil {
		return p.Binary
	}
	return ""
}

// HeadlessOptions configure a headless run.
type HeadlessOptions struct {
	Agent *HeadlessAgent
	// Command is the agent's binary ("" the profile's on PATH).
	Command string
	// Exe is the corral binary: it serves the private daemon and runs
	// corral exec and corral answer.
	Exe string
	// Only runs the cases named (nil all).
	Only []string
	// Log gets a line per case as it ends (nil: none).
	Log io.Writer
}

// HeadlessCaseResult is one case's outcome.
type HeadlessCaseResult struct {
	Name    string   `json:"name"`
	Expect  string   `json:"expect"`
	Code    int      `json:"want_exit"` // -1 any non-zero
	Key     string   `json:"key_event,omitempty"`
	Exit    int      `json:"exit"`
	Got     string   `json:"got"` // the key event's line, or the last line
	Missing []string `json:"missing,omitempty"`
	Unwant  []string `json:"unwanted,omitempty"`
	Seconds float64  `json:"seconds"`
	Right   bool     `json:"right"`
	Output  string   `json:"output"`
}

// HeadlessResult is one agent's headless run.
type HeadlessResult struct {
	Agent   string               `json:"agent"`
	Version string               `json:"version"`
	Pinned  string               `json:"pinned"`
	Cases   []HeadlessCaseResult `json:"cases"`
}

// OK says every case came out right.
func (r *HeadlessResult) OK() bool {
	for _, c := range r.Cases {
		if !c.Right {
			return false
		}
	}
	return len(r.Cases) > 0
}

// RunHeadless runs an agent's headless cases, each as a job of a private
// daemon (the path corral exec takes) against a fresh scripted server.
func RunHeadless(ctx context.Context, o HeadlessOptions) (*HeadlessResult, error) {
	a := o.Agent
	p, err := ProfileFor(a.Profile, nil)
	if err != nil {
		return nil, err
	}
	bin := o.Command
	if bin == "" {
		name := a.Binary
		if name == "" {
			name = p.Binary
		}
		if bin, err = exec.LookPath(name); err != nil {
			return nil, fmt.Errorf("no %s on PATH: install it (npm install -g %s) or name it with --command", name, p.Package)
		}
	}
	home := a.Home
	if home == nil {
		home = p.Home
	}
	base, _ := os.UserHomeDir()
	base = filepath.Join(base, ".cache")
	if err := os.MkdirAll(base, 0o700); err != nil {
		base = ""
	}
	dir, err := os.MkdirTemp(base, "corral-verify-headless-")
	if err != nil {
		return nil, fmt.Errorf("private folder: %w", err)
	}
	defer os.RemoveAll(dir)
	_ = os.Chmod(dir, 0o700)
	if err := os.MkdirAll(filepath.Join(dir, "config", "corral"), 0o700); err != nil {
		return nil, err
	}
	policy := filepath.Join(dir, "policy.toml")
	if err := os.WriteFile(policy, []byte(HeadlessPolicy), 0o600); err != nil {
		return nil, err
	}
	d, err := startDaemon(ctx, o.Exe, dir)
	if err != nil {
		return nil, err
	}
	defer d.stop()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CORRAL_") {
			env = append(env, kv)
		}
	}
	env = append(env, "CORRAL_SOCKET="+filepath.Join(dir, "s.sock"))

	res := &HeadlessResult{Agent: p.Name, Pinned: p.Version}
	if o.Command == "" || filepath.Base(bin) == p.Binary {
		res.Version = agentVersion(bin, p)
	}
	for _, c := range a.Cases {
		if o.Only != nil && !contains(o.Only, c.Name) {
			continue
		}
		r, err := runHeadlessCase(ctx, o.Exe, bin, dir, policy, env, p.Name, home, c)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", p.Name, c.Name, err)
		}
		res.Cases = append(res.Cases, r)
		if o.Log != nil {
			mark := "ok"
			if !r.Right {
				mark = "WRONG"
			}
			fmt.Fprintf(o.Log, "%s %s: %s, exit %d in %.1fs\n", p.Name, c.Name, mark, r.Exit, r.Seconds)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return res, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func startHeadlessModel(server string) (*mockmodel.Server, error) {
	switch server {
	case "":
		return nil, nil
	case "messages":
		m, err := mockmodel.Start(headlessCommand)
		if m != nil {
			m.Default = mockmodel.StepProse
		}
		return m, err
	case "responses":
		return mockmodel.StartResponses(headlessCommand)
	case "responses-unescalated":
		return mockmodel.StartResponsesUnescalated(headlessCommand)
	case "gemini":
		return mockmodel.StartGeminiSteps(headlessCommand)
	case "chat":
		return mockmodel.StartChatRefusing(headlessCommand)
	}
	return nil, fmt.Errorf("unknown scripted server %q", server)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// caseWait bounds one case: the slowest measured case ends within 20s.
const caseWait = 120 * time.Second

func runHeadlessCase(ctx context.Context, exe, bin, dir, policy string, env []string, agent string,
	home func(home, work, url string) ([]string, error), c HeadlessCase) (HeadlessCaseResult, error) {
	r := HeadlessCaseResult{Name: c.Name, Expect: c.Expect, Code: c.Code}
	if len(c.Want) > 0 {
		r.Key = c.Want[0]
	}
	model, err := startHeadlessModel(c.Server)
	if err != nil {
		return r, fmt.Errorf("scripted model server: %w", err)
	}
	url := ""
	if model != nil {
		defer model.Close()
		url = model.URL
		if c.Lost {
			model.Close()
		}
	}
	agentHome, work := filepath.Join(dir, c.Name, "home"), filepath.Join(dir, c.Name, "work")
	for _, d := range []string{agentHome, work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return r, err
		}
	}
	vars := []string{"HOME=" + agentHome, "NO_COLOR=1"}
	if home != nil {
		extra, err := home(agentHome, work, url)
		if err != nil {
			return r, fmt.Errorf("prepare %s's home: %w", agent, err)
		}
		vars = append(vars, extra...)
	}
	name := agent + "-" + c.Name
	args := []string{"exec", "--name", name}
	for _, f := range c.Flags {
		args = append(args, strings.ReplaceAll(f, "POLICY", policy))
	}
	for _, v := range vars {
		args = append(args, "--env", v)
	}
	args = append(append(args, "--", bin), c.Args...)
	cmd := exec.Command(exe, args...)
	cmd.Env, cmd.Dir = env, work
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return r, fmt.Errorf("start corral exec: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(caseWait)
	var waitErr error
	ended, killed := false, false
	// until waits for text in the output; false when the run ended first.
	until := func(text string) bool {
		for !strings.Contains(out.String(), text) {
			select {
			case waitErr = <-done:
				ended = true
				return false
			case <-deadline:
				killed = true
				_ = cmd.Process.Kill()
				return false
			case <-ctx.Done():
				return false
			case <-time.After(50 * time.Millisecond):
			}
		}
		return true
	}
	if c.Answer != "" && until("permission? ") {
		a := exec.Command(exe, "answer", name, c.Answer)
		a.Env = env
		if b, err := a.CombinedOutput(); err != nil {
			fmt.Fprintf(&out, "\n(corral answer %s failed: %v: %s)\n", c.Answer, err, bytes.TrimSpace(b))
		}
	}
	if c.Interrupt && !ended && until("tool ") {
		_ = cmd.Process.Signal(syscall.SIGINT)
	}
	if !ended {
		var late <-chan time.Time
		if !killed {
			late = deadline
		}
		select {
		case waitErr = <-done:
		case <-late:
			_ = cmd.Process.Kill()
			waitErr = <-done
			fmt.Fprintf(&out, "\n(corral exec did not end within %v)\n", caseWait)
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			<-done
			return r, ctx.Err()
		}
	}
	if killed {
		fmt.Fprintf(&out, "\n(corral exec did not end within %v)\n", caseWait)
	}
	r.Seconds = time.Since(start).Seconds()
	if ee, ok := waitErr.(*exec.ExitError); ok {
		r.Exit = ee.ExitCode()
	} else if waitErr != nil {
		return r, fmt.Errorf("corral exec: %w", waitErr)
	}
	r.Output = strings.ReplaceAll(strings.ReplaceAll(out.String(), policy, "policy.toml"), dir, "<tmp>")
	r.Right = r.Exit == c.Code || (c.Code == -1 && r.Exit != 0)
	for _, w := range c.Want {
		if !strings.Contains(r.Output, w) {
			r.Missing = append(r.Missing, w)
			r.Right = false
		}
	}
	for _, n := range c.Not {
		if strings.Contains(r.Output, n) {
			r.Unwant = append(r.Unwant, n)
			r.Right = false
		}
	}
	r.Got = lineWith(r.Output, r.Key)
	return r, nil
}

// lineWith returns the output's line holding key, else its last line.
func lineWith(out, key string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if key != "" {
		for _, l := range lines {
			if strings.Contains(l, key) {
				return strings.TrimSpace(l)
			}
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}
