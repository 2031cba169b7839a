package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// approvePolicy allows `ls -la /tmp` exactly, denies rm, and lets
// AskUserQuestion through a rule that must never answer a question.
const approvePolicy = `[[rule]]
tool = "Bash"
input = "^ls -la /tmp$"
decision = "allow"

[[rule]]
tool = "Bash"
input = "^rm "
decision = "deny"

[[rule]]
tool = "AskUserQuestion"
decision = "allow"

[[rule]]
tool = "Bash"
input = "^(go test|cat) "
decision = "allow"
`

// TestPanePolicyDecidesHookRequests runs `corral hook` inside real panes
// with recorded Claude Code PermissionRequest payloads: an allow or deny
// rule decides at once (the hook prints the decision for the agent, an
// event names the file and rule, ls shows it); no matching rule, a
// question or a request without its input prints nothing, which leaves it
// to the person.
func TestPanePolicyDecidesHookRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfgDir := filepath.Join(e.dir, "config", "corral")
	os.MkdirAll(cfgDir, 0o700)
	os.WriteFile(filepath.Join(cfgDir, "policy.toml"), []byte(approvePolicy), 0o600)
	os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte("[panes]\npolicy = \"policy.toml\"\n"), 0o600)
	own := filepath.Join(e.dir, "own.toml")
	os.WriteFile(own, []byte("[[rule]]\ntool = \"Write\"\ndecision = \"allow\"\n"), 0o600)
	src, _ := filepath.Abs("../../testdata/hooks")

	// Each pane runs every payload through corral hook once told to go
	// (after corral run has returned, so its policy is in force).
	pane := func(name string, flags ...string) string {
		dir := filepath.Join(e.dir, name)
		os.MkdirAll(dir, 0o700)
		ents, _ := os.ReadDir(src)
		for _, f := range ents {
			b, _ := os.ReadFile(filepath.Join(src, f.Name()))
			os.WriteFile(filepath.Join(dir, f.Name()), b, 0o600)
		}
		script := `while [ ! -e go ]; do sleep 0.02; done; for f in *.json; do "` + corralBin + `" hook < "$f" > "$f.out" 2>"$f.err"; touch "$f.done"; done; sleep 60`
		args := append([]string{"run", "--name", name, "--cwd", dir}, flags...)
		e.must(append(args, "--", "sh", "-c", script)...)
		os.WriteFile(filepath.Join(dir, "go"), nil, 0o600)
		waitFor(t, 20*time.Second, name+"'s hooks", func() bool {
			for _, f := range ents {
				if _, err := os.Stat(filepath.Join(dir, f.Name()+".done")); err != nil {
					return false
				}
			}
			return true
		})
		return dir
	}
	out := func(dir, payload string) string {
		b, _ := os.ReadFile(filepath.Join(dir, payload+".out"))
		return strings.TrimSpace(string(b))
	}
	const allow = `{"hookSpecificOutput":{"decision":{"behavior":"allow"},"hookEventName":"PermissionRequest"}}`
	policy := filepath.Join(cfgDir, "policy.toml")

	for _, c := range []struct {
		name  string
		flags []string
		want  map[string]string // payload → the hook's stdout
	}{
		{"default", nil, map[string]string{
			"claude-bash-ls.json":  allow,
			"claude-bash-rm.json":  `{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"denied by corral policy ` + policy + ` rule 2"},"hookEventName":"PermissionRequest"}}`,
			"claude-write.json":    "", // no rule: the person decides
			"claude-question.json": "", // a question is never answered by a rule
			"claude-no-input.json": "", // not read whole
		}},
		{"own", []string{"--policy", own}, map[string]string{
			"claude-bash-ls.json": "", "claude-bash-rm.json": "", "claude-write.json": allow, "claude-question.json": "",
		}},
		{"none", []string{"--no-policy"}, map[string]string{
			"claude-bash-ls.json": "", "claude-bash-rm.json": "", "claude-write.json": "",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := pane(c.name, c.flags...)
			for payload, want := range c.want {
				if got := out(dir, payload); got != want {
					errb, _ := os.ReadFile(filepath.Join(dir, payload+".err"))
					t.Errorf("%s: hook printed %q, want %q (stderr %q)", payload, got, want, errb)
				}
			}
		})
	}

	// ls shows the policy and its latest decision; events name file and rule.
	var ps []struct {
		Name     string
		Policy   string
		State    string
		Approval *struct{ Decision, Text string }
	}
	json.Unmarshal([]byte(e.must("ls", "--json")), &ps)
	for _, p := range ps {
		switch p.Name {
		case "default":
			if p.Policy != policy || p.Approval == nil {
				t.Errorf("default pane: %+v", p)
			}
		case "none":
			if p.Policy != "" || p.Approval != nil {
				t.Errorf("a pane without a policy shows one: %+v", p)
			}
		}
	}
	events := e.must("events", "--since", "1h")
	for _, want := range []string{
		`"source":"policy","rule":"` + policy + ` rule 1"`,
		`"message":"allowed by rule 1: Bash: ls -la /tmp"`,
		`"message":"denied by rule 2: Bash: rm -rf /tmp/w/build"`,
		`"source":"policy","rule":"` + own + ` rule 1"`,
	} {
		if !strings.Contains(events, want) {
			t.Errorf("events lack %s:\n%s", want, events)
		}
	}
	// A decided request never shows the pane blocked.
	if strings.Contains(events, `"name":"default","agent":"generic","state":"blocked","kind":"permission","message":"approve Bash: ls -la /tmp"`) {
		t.Errorf("an allowed request blocked the pane:\n%s", events)
	}

	// corral policy explain says the same as the daemon did.
	for _, c := range []struct{ args, want string }{
		{"Bash|ls -la /tmp", "verdict: allowed by rule 1: Bash: ls -la /tmp"},
		{"Bash|rm -rf /", "verdict: denied by rule 2: Bash: rm -rf /"},
		// Each simple command is taken by its own rule, and a deny wins.
		{"Bash|ls -la /tmp; rm -rf ~", "verdict: denied by rule 2 (`rm -rf ~`): Bash: ls -la /tmp; rm -rf ~"},
		{"Bash|ls -la /tmp; curl example.com", "verdict: no rule matches `curl example.com` in Bash: ls -la /tmp; curl example.com, and rule 1 takes `ls -la /tmp` but ; joins it"},
	} {
		if got := e.must(append([]string{"policy", "explain"}, strings.Split(c.args, "|")...)...); !strings.Contains(got, c.want) {
			t.Errorf("policy explain %s:\n%s", c.args, got)
		}
	}
	if got := e.must("policy", "explain", "--payload", filepath.Join(src, "claude-question.json")); !strings.Contains(got, "a question for you") {
		t.Errorf("policy explain of a question:\n%s", got)
	}
	if _, errs, code := e.run("run", "--policy", filepath.Join(e.dir, "missing.toml"), "--", "true"); code == 0 || !strings.Contains(errs, "missing.toml") {
		t.Errorf("a missing policy file: exit %d, %s", code, errs)
	}
}

// TestRealClaudeCodePolicy runs the real Claude Code in a pane with a
// policy that allows the model's `ls -la /tmp`: the request is decided by
// the rule through the PermissionRequest hook, no dialog waits on anyone,
// and the turn ends. A policy without a matching rule leaves the dialog to
// the person. Opt-in like TestRealClaudeCode.
func TestRealClaudeCodePolicy(t *testing.T) {
	t.Parallel()
	e, f := claudeFixture(t)
	allowLs := filepath.Join(e.dir, "allow.toml")
	os.WriteFile(allowLs, []byte("[[rule]]\ntool = \"Bash\"\ninput = \"^ls -la /tmp$\"\ndecision = \"allow\"\n"), 0o600)
	other := filepath.Join(e.dir, "other.toml")
	os.WriteFile(other, []byte("[[rule]]\ntool = \"Bash\"\ninput = \"^git status$\"\ndecision = \"allow\"\n"), 0o600)
	start := func(name, policy, prompt string) {
		e.must("run", "--name", name, "--cwd", f.work, "--size", "120x32", "--policy", policy,
			"--env", "HOME="+f.home, "--env", "ANTHROPIC_BASE_URL="+f.model.URL, "--env", "ANTHROPIC_API_KEY="+f.key,
			"--env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "--env", "DISABLE_AUTOUPDATER=1", "--env", "DISABLE_TELEMETRY=1",
			"--", f.claude, "--permission-mode", "default")
		waitFor(t, 60*time.Second, name+"'s input box", func() bool { return strings.Contains(e.screen(name), "? for shortcuts") })
		e.must("send", name, prompt, "--enter")
	}

	start("auto", allowLs, "please list the files in /tmp")
	if _, errs, code := e.run("wait", "auto", "--state", "done", "--timeout", "60s"); code != 0 {
		t.Fatalf("the allowed turn never ended (%s):\n%s\n%s", errs, e.must("screen", "auto"), e.must("events", "--since", "1h"))
	}
	events := e.must("events", "--since", "1h")
	if !strings.Contains(events, `"message":"allowed by rule 1: Bash: ls -la /tmp","source":"policy","rule":"`+allowLs+` rule 1"`) {
		t.Fatalf("no decision event:\n%s", events)
	}
	// Claude Code draws its dialog while the hook runs and may report it
	// (OSC 7501) for a moment after the decision: never for long.
	var evs []struct {
		Name, State string
		Time        time.Time
	}
	for _, l := range strings.Split(strings.TrimSpace(events), "\n") {
		var ev struct {
			Name, State string
			Time        time.Time
		}
		json.Unmarshal([]byte(l), &ev)
		evs = append(evs, ev)
	}
	for i, ev := range evs {
		if ev.Name == "auto" && ev.State == "blocked" && (i+1 == len(evs) || evs[i+1].Time.Sub(ev.Time) > 2*time.Second) {
			t.Fatalf("the allowed request left the pane blocked:\n%s", events)
		}
	}

	start("ask", other, "corral:shell list the files in /tmp")
	if _, errs, code := e.run("wait", "ask", "--state", "blocked", "--timeout", "60s"); code != 0 {
		t.Fatalf("an unmatched request was not left to the person (%s):\n%s", errs, e.must("screen", "ask"))
	}
	var ps []struct {
		Name, State, Kind string
		Approval          *struct{ Decision, Text string }
	}
	json.Unmarshal([]byte(e.must("ls", "--json")), &ps)
	for _, p := range ps {
		if p.Name == "ask" && (p.Kind != "permission" || p.Approval == nil || p.Approval.Decision != "person") {
			t.Fatalf("ask pane: %+v", p)
		}
	}
	e.must("answer", "ask", "yes")
	if _, errs, code := e.run("wait", "ask", "--state", "done", "--timeout", "60s"); code != 0 {
		t.Fatalf("the answered turn never ended (%s):\n%s", errs, e.must("screen", "ask"))
	}
	t.Logf("events:\n%s", e.must("events", "--since", "1h"))
}

// TestPanePolicyDecidesReportedRequests: an agent without hooks that
// reports its permission request whole through OSC 7501 ("approve Bash:
// CMD", the fake agent as Claude Code does) is answered by the rule with
// the manifest's keys once the prompt shows the command; no matching rule
// leaves it blocked for the person.
func TestPanePolicyDecidesReportedRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	policy := filepath.Join(e.dir, "p.toml")
	os.WriteFile(policy, []byte(approvePolicy), 0o600)
	// The cases, a pane each in the one daemon, at once.
	run, wait := atOnce(t)
	defer wait()
	for _, c := range []struct {
		name, command, want, decision string
	}{
		{"allowed", "ls -la /tmp", "done", "allowed by rule 1: Bash: ls -la /tmp"},
		{"denied", "rm -rf /tmp/x", "idle,done", "denied by rule 2: Bash: rm -rf /tmp/x"},
		{"unknown", "curl example.com", "blocked", "no rule matches Bash: curl example.com: left to you"},
		// "./..." ends the command on screen too: whole.
		{"dots", "go test ./...", "done", "allowed by rule 4: Bash: go test ./..."},
		// An ellipsis may be a cut: never allowed from it.
		{"cut", "cat notes…", "blocked", "the request was not read whole (approve Bash: cat notes…): left to you"},
		// A forged report: "$ ls -la /tmp" printed above a dialog for
		// something else, the report claiming ls. The dialog decides.
		{"forged", "chmod -R 777 /tmp/x", "blocked", "the prompt on screen does not show ls -la /tmp whole: left to you"},
	} {
		run(c.name, func(t *testing.T) {
			args := []string{"run", "--name", c.name, "--agent", "claude-code", "--policy", policy, "--", corralBin, "fake-agent", "--osc7501", "--command", c.command}
			if c.name == "forged" {
				args = append(args, "--claim", "ls -la /tmp")
			}
			e.must(args...)
			e.must("send", c.name, "ask", "--enter")
			if c.want != "blocked" {
				// The decision may come before any wait could see the
				// block: wait for its event, then for the state it leads to.
				decided := `"message":"` + c.decision + `","source":"policy","rule":"` + policy + ` rule `
				waitFor(t, 20*time.Second, "the decision event", func() bool {
					return strings.Contains(e.eventLines(time.Hour), decided)
				})
				if _, errs, code := e.run("wait", c.name, "--state", c.want, "--timeout", "20s"); code != 0 {
					t.Fatalf("never answered (%s):\n%s", errs, e.must("screen", c.name))
				}
				// Decided within the decision window: never read blocked.
				for _, ev := range e.events() {
					if ev.Name == c.name && ev.State == "blocked" {
						t.Fatalf("a request the policy decided read blocked: %+v", ev)
					}
				}
				return
			}
			e.must("wait", c.name, "--state", "blocked", "--timeout", "20s")
			// Left to the person: still blocked a while later, with why.
			waitFor(t, 10*time.Second, "the reason on ls", func() bool {
				return strings.Contains(e.must("ls", "--json"), c.decision)
			})
			if p := e.pane(c.name); p.State != "blocked" {
				t.Fatalf("an unmatched request was answered: %+v", p)
			}
		})
	}
}

// TestPolicyApprovedNeverBlocked: Claude Code draws its permission dialog
// before its PermissionRequest hook reaches corral. A request the pane's
// policy decides never reads blocked (no blocked event, wait --state
// blocked does not return): the pane reads working, kind approved, and
// the decision is an event. One the policy leaves to the person reads
// blocked as soon as the hook says so.
func TestPolicyApprovedNeverBlocked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	policy := filepath.Join(e.dir, "p.toml")
	os.WriteFile(policy, []byte(approvePolicy), 0o600)
	bin := filepath.Join(e.dir, "bin")
	os.MkdirAll(bin, 0o755)
	// A fake Claude Code: corral's fake agent under the name claude, so
	// that corral adds its hooks (--settings) as it does to the real one.
	proctest.WriteExecutable(filepath.Join(bin, "claude"), []byte("#!/bin/sh\nexec "+corralBin+" fake-agent \"$@\"\n"), 0o755)
	run, wait := atOnce(t)
	defer wait()
	for _, c := range []struct {
		name, command string
		blocked       bool
	}{
		{"approved", "ls -la /tmp", false},
		{"person", "curl example.com", true},
	} {
		run(c.name, func(t *testing.T) {
			e.must("run", "--name", c.name, "--agent", "claude-code", "--policy", policy, "--", filepath.Join(bin, "claude"), "--command", c.command, "--hook-delay", "700ms")
			// Each ends where it stays: the approved request done (the
			// policy answered it), the other blocked on its person. The
			// event log says whether the approved one was ever blocked.
			end := "blocked"
			if !c.blocked {
				end = "done"
			}
			e.must("send", c.name, "ask", "--enter")
			_, _, code := e.run("wait", c.name, "--state", end, "--timeout", "15s")
			events := e.must("events", "--since", "1h")
			var sawBlocked, sawDecision bool
			for _, l := range strings.Split(strings.TrimSpace(events), "\n") {
				var ev struct{ Name, State, Kind, Source, Message string }
				json.Unmarshal([]byte(l), &ev)
				if ev.Name != c.name {
					continue
				}
				sawBlocked = sawBlocked || ev.State == "blocked"
				sawDecision = sawDecision || (ev.Source == "policy" && strings.Contains(ev.Message, "allowed by rule 1"))
			}
			if c.blocked {
				if code != 0 || !sawBlocked {
					t.Fatalf("a request left to the person: wait --state blocked exit %d, blocked event %v\n%s", code, sawBlocked, events)
				}
				return
			}
			if code != 0 || sawBlocked || !sawDecision {
				t.Fatalf("an approved request: wait --state done exit %d, blocked event %v, decision event %v\n%s",
					code, sawBlocked, sawDecision, events)
			}
		})
	}
}
