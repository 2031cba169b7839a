// Package agents knows how each agent CLI reports on itself: the
// integration corral adds for one run (never touching the user's own
// settings files; `corral integrate` is the explicit opt-in for agents that
// need one), and how to read what its hooks send.
package agents

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unique"

	"github.com/corral-dev/corral/internal/agentdef"
)

// Claude Code hook events corral listens to.
var claudeEvents = []string{"SessionStart", "PermissionRequest", "Notification", "UserPromptSubmit", "PostToolUse", "Stop", "StopFailure", "SessionEnd"}

// byArgv are the hooks integrations corral has, by the name an
// agent.toml's [hooks] integration gives. Claude Code and Codex take
// corral's hooks on their command line (true), so corral must find them in
// it; Gemini CLI takes them through its environment, so every pane gets
// them.
var byArgv = map[string]bool{"claude-code": true, "codex": true, "gemini": false}

type knownAgent struct {
	name, pkg string
	bins      []string
	byArgv    bool
}

// known are the agents corral integrates with: those of the registry
// whose integration is in byArgv, with their package and binary.
var known = sync.OnceValue(func() []knownAgent { return knownOf(agentdef.BuiltIn()) })

func knownOf(r *agentdef.Registry) []knownAgent {
	var out []knownAgent
	for _, a := range r.All() {
		if argv, ok := byArgv[a.Hooks.Integration]; ok {
			out = append(out, knownAgent{a.Hooks.Integration, a.Install.NPM, []string{a.Binary}, argv})
		}
	}
	return out
}

// Integration is a hooks integration: the name an agent.toml's [hooks]
// integration gives, the npm package and binaries it finds in a command
// line.
type Integration struct {
	Name, Package string
	Binaries      []string
}

// Integrations are the hooks integrations corral has.
func Integrations() []Integration {
	var out []Integration
	for _, k := range known() {
		out = append(out, Integration{Name: k.name, Package: k.pkg, Binaries: k.bins})
	}
	return out
}

func integrable(agent string) (byArgv, ok bool) {
	for _, k := range known() {
		if k.name == agent {
			return k.byArgv, true
		}
	}
	return false, false
}

// Found is where an agent sits in a command line.
type Found struct {
	Agent string // "" when none was found
	// At is the index of the agent's first own argument: where flags for
	// it go.
	At int
	// Via is the launcher corral saw through ("npx", "node", "env"…), ""
	// when the agent is the command itself.
	Via string
	// Hidden names what hid the command when corral could not see through
	// it: "sh -c", "./run.sh".
	Hidden string
}

// resolve follows a command to the file it runs (PATH lookup, symlinks),
// so that a link named anything that points into an agent's package is
// that agent. A variable for tests.
var resolve = defaultResolve

func defaultResolve(word string) string {
	p, err := exec.LookPath(word)
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// agentOf names the agent a command word or script path runs, or "".
func agentOf(word string) string {
	if a := agentOfPath(word); a != "" {
		return a
	}
	if strings.HasPrefix(word, "-") || word == "" {
		return ""
	}
	return agentOfPath(resolve(word))
}

func agentOfPath(p string) string {
	if p == "" {
		return ""
	}
	base := filepath.Base(p)
	for _, ext := range []string{".exe", ".js", ".cjs", ".mjs"} {
		base = strings.TrimSuffix(base, ext)
	}
	slashed := "/" + filepath.ToSlash(p)
	for _, k := range known() {
		if slices.Contains(k.bins, base) || strings.Contains(slashed, "/node_modules/"+k.pkg+"/") {
			return k.name
		}
	}
	return ""
}

// agentOfPackage names the agent an npm package spec (with an optional
// @version) or a bin name runs, or "".
func agentOfPackage(spec string) string {
	name := spec
	if i := strings.LastIndex(spec, "@"); i > 0 {
		name = spec[:i]
	}
	for _, k := range known() {
		if name == k.pkg || slices.Contains(k.bins, name) {
			return k.name
		}
	}
	return ""
}

// Find finds the agent in a command line, seeing through the launchers
// people put in front of it: absolute paths and links, env, nohup, nice,
// timeout, stdbuf, setsid, npx / bunx / pnpm dlx / yarn dlx / npm exec --,
// and node SCRIPT. A shell command string or a script of the user's own
// hides it (Hidden says which).
func Find(argv []string) Found {
	var via []string
	found := func(agent string, at int) Found {
		return Found{Agent: agent, At: at, Via: strings.Join(via, " ")}
	}
	i := 0
	for i < len(argv) {
		word := argv[i]
		base := filepath.Base(word)
		switch base {
		case "env":
			via = append(via, base)
			i = skipEnv(argv, i+1)
			if i < 0 {
				return Found{Hidden: "env -S"}
			}
			continue
		case "nohup", "setsid", "nice", "timeout", "stdbuf", "chrt", "ionice", "taskset":
			via = append(via, base)
			i = skipOptions(argv, i+1, wrapperValueFlags[base], nil)
			if base == "timeout" || base == "chrt" || base == "taskset" {
				i++ // the duration, priority or mask before the command
			}
			continue
		case "npx", "bunx", "pnpx":
			via = append(via, base)
			return runner(argv, i+1, via)
		case "pnpm", "yarn", "bun", "npm":
			if i+1 < len(argv) && (argv[i+1] == "dlx" || (base == "bun" && argv[i+1] == "x") ||
				(base == "npm" && (argv[i+1] == "exec" || argv[i+1] == "x"))) {
				via = append(via, base+" "+argv[i+1])
				if base == "npm" {
					// npm parses every flag on its line as its own unless
					// "--" ends its options.
					dd := slices.Index(argv[i+2:], "--")
					if dd < 0 {
						f := runner(argv, i+2, via)
						if f.Agent != "" {
							return Found{Hidden: base + " " + argv[i+1] + " without --"}
						}
						return f
					}
				}
				return runner(argv, i+2, via)
			}
		case "node", "nodejs":
			via = append(via, base)
			j := skipOptions(argv, i+1, nodeValueFlags, nodeCodeFlags)
			if j < 0 || j >= len(argv) {
				return Found{Hidden: strings.Join(argv[i:min(len(argv), i+2)], " ")}
			}
			if a := agentOf(argv[j]); a != "" {
				return found(a, j+1)
			}
			return Found{Hidden: base + " " + argv[j]}
		case "sh", "bash", "zsh", "dash", "fish", "ksh":
			for _, w := range argv[i+1:] {
				if !strings.HasPrefix(w, "-") || strings.HasPrefix(w, "--") {
					break
				}
				if strings.Contains(w, "c") {
					return Found{Hidden: base + " " + w}
				}
			}
		}
		if a := agentOf(word); a != "" {
			return found(a, i+1)
		}
		return Found{Hidden: word}
	}
	return Found{}
}

// Flags that take a separate value, per launcher.
var (
	wrapperValueFlags = map[string][]string{
		"nice": {"-n", "--adjustment"}, "timeout": {"-s", "--signal", "-k", "--kill-after"},
		"stdbuf": {"-i", "-o", "-e", "--input", "--output", "--error"}, "ionice": {"-c", "-n", "-p", "-P", "-u"},
		"chrt": {}, "taskset": {}, "nohup": {}, "setsid": {},
	}
	nodeCodeFlags    = []string{"-e", "--eval", "-p", "--print"}
	nodeValueFlags   = []string{"-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions", "--title", "--env-file", "--inspect-port", "--input-type", "--stack-size"}
	runnerValueFlags = []string{"-p", "--package", "--registry", "--cache", "--userconfig", "--prefix"}
)

// skipOptions returns the index of the first word after argv[i:]'s
// options (valued: those that take the next word), or -1 for an option
// that runs code given as text (node -e).
func skipOptions(argv []string, i int, valued, code []string) int {
	for i < len(argv) {
		w := argv[i]
		switch {
		case w == "--":
			return i + 1
		case slices.Contains(code, w):
			return -1
		case !strings.HasPrefix(w, "-") || w == "-":
			return i
		case slices.Contains(valued, w):
			i += 2
		default:
			i++
		}
	}
	return i
}

// skipEnv returns the index of env's command, or -1 for env -S (a command
// line in one string).
func skipEnv(argv []string, i int) int {
	for ; i < len(argv); i++ {
		w := argv[i]
		switch {
		case strings.HasPrefix(w, "-S") || strings.HasPrefix(w, "--split-string"):
			return -1
		case w == "-u" || w == "--unset" || w == "-C" || w == "--chdir":
			i++
		case strings.HasPrefix(w, "-"), strings.Contains(w, "=") && !strings.HasPrefix(w, "="):
		default:
			return i
		}
	}
	return i
}

// runner reads a package runner's line (npx, pnpm dlx…) from argv[i:]: its
// options, then the package or command to run, whose own arguments follow.
func runner(argv []string, i int, via []string) Found {
	pkgFlag := ""
	for i < len(argv) {
		w := argv[i]
		switch {
		case w == "--":
			i++
			continue
		case w == "-c" || w == "--call" || strings.HasPrefix(w, "--call="):
			return Found{Hidden: strings.Join(via, " ") + " -c"}
		case w == "-p" || w == "--package":
			if i+1 < len(argv) {
				pkgFlag = argv[i+1]
			}
			i += 2
			continue
		case strings.HasPrefix(w, "--package="):
			pkgFlag = strings.TrimPrefix(w, "--package=")
			i++
			continue
		case strings.HasPrefix(w, "-"):
			if slices.Contains(runnerValueFlags, w) {
				i++
			}
			i++
			continue
		}
		a := agentOfPackage(w)
		if a == "" && pkgFlag != "" && agentOfPackage(pkgFlag) != "" && !strings.ContainsAny(w, "/@") {
			a = agentOfPackage(pkgFlag) // --package=@openai/codex codex
		}
		if a == "" {
			return Found{Hidden: strings.Join(via, " ") + " " + w}
		}
		return Found{Agent: a, At: i + 1, Via: strings.Join(via, " ")}
	}
	return Found{Hidden: strings.Join(via, " ")}
}

// Launch is a command line with corral's reporting added for one run.
type Launch struct {
	Argv []string
	Env  []string // added to the program's environment
	// Files were written for this run; remove them when it ends.
	Files []string
	// Agent is the agent found in the command line ("" for none).
	Agent string
	// Applied lists the agents whose integration this launch carries.
	Applied []string
	// Missing says, per agent corral integrates with, why this launch
	// does not carry its integration.
	Missing map[string]string
	// Watch: the agent may refuse the integration, and says so on its
	// screen (see ScreenProblem).
	Watch bool
	// Doubt says, per agent, why the integration this launch carries will
	// likely not be loaded (Gemini CLI in a folder it does not trust):
	// the pane says so until the agent's first hook report proves it wrong.
	Doubt map[string]string
}

// Options are what IntegrateRun needs beyond the command line.
type Options struct {
	// Hook is the command a hook runs, e.g. ["/usr/bin/corral", "hook"].
	Hook []string
	// Env is the program's whole environment (later entries win); it
	// carries CORRAL_PANE, CORRAL_TOKEN and CORRAL_SOCKET.
	Env []string
	// Dir is a private folder for files the integration needs.
	Dir string
	// Cwd is the program's working folder.
	Cwd string
}

// IntegrateRun adds every integration the launch allows: on the command
// line for the agent found in it, through the environment for the agents
// that take one (whatever the command is, so an agent started later in
// the pane, or by a script, gets it too). Missing says why the others are
// not there.
func IntegrateRun(argv []string, o Options) Launch {
	f := Find(argv)
	l := Launch{Argv: argv, Agent: f.Agent, Missing: map[string]string{}}
	// corral's own fake agent draws agents' screens for demos and tests;
	// it has no hooks to miss.
	fake := len(argv) > 1 && argv[1] == "fake-agent" && len(o.Hook) > 0 && argv[0] == o.Hook[0]
	for _, k := range known() {
		if !k.byArgv || (fake && f.Agent != k.name) {
			continue
		}
		if f.Agent == k.name {
			l.Argv, _ = integrateAt(argv, f, o.Hook)
			l.Applied = append(l.Applied, k.name)
			continue
		}
		hidden := f.Hidden
		if hidden == "" {
			hidden = f.Agent
		}
		if hidden == "" {
			hidden = argv[0]
		}
		// Interned: every pane started the same way says the same, and
		// the daemon keeps what each pane's launch said for its life.
		l.Missing[k.name] = intern(fmt.Sprintf("%s recognised, but its hooks go on its command line and the pane runs it through %s, "+
			"where corral cannot add them; start it as corral run -- %s … (npx, node, env and links are seen through)", k.name, hidden, k.bins[0]))
	}
	env, files, problem, watch := geminiRun(f, argv, o)
	if problem != "" {
		l.Missing["gemini"] = intern(problem)
	} else {
		l.Env = append(l.Env, env...)
		l.Files = append(l.Files, files...)
		l.Applied = append(l.Applied, "gemini")
		l.Watch = watch
		if why := geminiUntrusted(o.Env, o.Cwd); why != "" {
			l.Doubt = map[string]string{"gemini": why}
		}
	}
	return l
}

// Status says which integration is in force for a pane whose agent is
// recognised as agent ("" or an agent corral does not integrate with:
// the one found in the command line), and when none is, why.
func (l Launch) Status(agent string) (integration, problem string) {
	if _, ok := integrable(agent); !ok {
		agent = l.Agent
	}
	if _, ok := integrable(agent); !ok {
		return "", ""
	}
	if slices.Contains(l.Applied, agent) {
		return agent, ""
	}
	return "", l.Missing[agent]
}

// Integrate returns the command line with corral's reporting added, and the
// agent it is for ("" when the command runs no agent corral integrates
// with through its command line). hook is the command a hook runs, e.g.
// ["/usr/bin/corral", "hook"].
func Integrate(argv []string, hook []string) ([]string, string) {
	return integrateAt(argv, Find(argv), hook)
}

func integrateAt(argv []string, f Found, hook []string) ([]string, string) {
	switch f.Agent {
	case "claude-code":
		cmd := shellQuote(append(append([]string(nil), hook...), "--agent", "claude-code"))
		entry := []map[string]any{{"hooks": []map[string]any{{"type": "command", "command": cmd, "timeout": 10}}}}
		hooks := map[string]any{}
		for _, ev := range claudeEvents {
			hooks[ev] = entry
		}
		settings, _ := json.Marshal(map[string]any{"hooks": hooks})
		return insertAt(argv, f.At, "--settings", string(settings)), "claude-code"
	case "codex":
		parts := make([]string, 0, len(hook)+2)
		for _, h := range append(append([]string(nil), hook...), "--agent", "codex") {
			parts = append(parts, fmt.Sprintf("%q", h))
		}
		return insertAt(argv, f.At, "-c", "notify=["+strings.Join(parts, ",")+"]"), "codex"
	}
	return argv, ""
}

func insertAt(argv []string, at int, extra ...string) []string {
	out := append(append([]string(nil), argv[:at]...), extra...)
	return append(out, argv[at:]...)
}

// shellQuote joins words for sh -c, each in single quotes.
func shellQuote(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// lookup returns the last value of key in env.
func lookup(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// exists reports whether path names something.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// intern returns the one copy of s kept for the process.
func intern(s string) string { return unique.Make(s).Value() }
