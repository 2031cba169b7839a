package doctor

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/corral-dev/corral/internal/agentdef"
	"github.com/corral-dev/corral/internal/agents"
)

// Agent is an agent CLI corral knows by name.
type Agent struct {
	Name    string // corral's name for it (corral run --agent, corral verify --agent)
	Title   string
	Binary  string // its command on PATH
	Package string // its npm package
	// Verified is the version corral verify last passed, as docs/agents.md
	// lists it. A test keeps the two in step.
	Verified string
	// Integration names its hooks integration (agent.toml's [hooks]),
	// whose checks agentCheck adds; "": corral reads its screen.
	Integration string
}

// Agents are the agent CLIs corral knows: the registry's
// (agents/NAME/agent.toml).
var Agents = sync.OnceValue(func() []Agent {
	var out []Agent
	for _, a := range agentdef.BuiltIn().All() {
		out = append(out, Agent{Name: a.Name, Title: a.Title, Binary: a.Binary, Package: a.Install.NPM,
			Verified: a.Install.Verified, Integration: a.Hooks.Integration})
	}
	return out
})

// agentChecks: each agent CLI on PATH, its version against the one
// verified, and how its hooks reach corral. The --version runs go at
// once, each bounded by CommandTimeout.
func agentChecks(ctx context.Context, e *Env) []Check {
	results := make([][]Check, len(Agents()))
	var wg sync.WaitGroup
	for i, a := range Agents() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = agentCheck(ctx, e, a)
		}()
	}
	wg.Wait()
	var out []Check
	found := 0
	for _, cs := range results {
		if cs[0].Status != Skip {
			found++
		}
		out = append(out, cs...)
	}
	if found == 0 {
		out = append(out, Check{Name: "agents", Status: Warn, Found: "none of corral's known agent CLIs is on PATH (corral runs any program, and knows these)",
			Fix: "install one, e.g. npm install -g @anthropic-ai/claude-code; if it is installed, put its folder on PATH"})
	}
	return out
}

func agentCheck(ctx context.Context, e *Env, a Agent) []Check {
	c := Check{Name: a.Name}
	path, err := e.LookPath(a.Binary)
	if err != nil {
		c.Status = Skip
		c.Found = fmt.Sprintf("%s is not on PATH (npm install -g %s installs %s)", a.Binary, a.Package, a.Title)
		return []Check{c}
	}
	reinstall := fmt.Sprintf("npm install -g %s@%s installs the version verified", a.Package, a.Verified)
	out, err := e.Run(ctx, CommandTimeout, path, "--version")
	version := versionIn(out)
	switch {
	case err != nil:
		c.Status = Warn
		c.Found = fmt.Sprintf("%s --version: %v", path, err)
		if line := firstLine(out); line != "" {
			c.Found += ": " + line
		}
		c.Fix = fmt.Sprintf("run %s --version yourself: it should print its version and exit; %s", a.Binary, reinstall)
	case version == "":
		c.Status = Warn
		c.Found = fmt.Sprintf("%s --version printed no version: %q", path, firstLine(out))
		c.Fix = fmt.Sprintf("is %s %s? %s", path, a.Title, reinstall)
	default:
		c.Found = fmt.Sprintf("%s %s at %s", a.Title, version, path)
		switch cmp := compareVersions(version, a.Verified); {
		case cmp == 0:
			c.Status = OK
			c.Found += ", the version corral verify passed"
		case cmp > 0:
			c.Status = Warn
			c.Found += fmt.Sprintf(", newer than the %s corral verify passed: its screens may have changed since", a.Verified)
			c.Fix = fmt.Sprintf("corral verify --agent %s checks corral against it (a scripted model, a private daemon and HOME: nothing of yours is touched)", a.Name)
		default:
			c.Status = Warn
			c.Found += fmt.Sprintf(", older than the %s corral verify passed", a.Verified)
			c.Fix = fmt.Sprintf("%s; or corral verify --agent %s checks corral against this one", reinstall, a.Name)
		}
	}
	switch a.Integration {
	case "claude-code":
		return []Check{c, claudeHooks(e)}
	case "codex":
		return []Check{c, {Name: "codex hooks", Status: OK, Found: "on its command line in each corral pane (-c notify=…): nothing to install"}}
	case "gemini":
		return []Check{c, geminiExtension(e), geminiTrust(e)}
	}
	c.Found += "; it has no hooks: corral reads its screen"
	return []Check{c}
}

// claudeHooks: Claude Code takes corral's hooks on its command line; the
// ones it runs in watched tmux panes, started by hand, need them in its
// own settings (corral integrate claude-code --global).
func claudeHooks(e *Env) Check {
	c := Check{Name: "claude-code hooks", Status: OK, Found: "on its command line in each corral pane (--settings): nothing to install"}
	path, installed, err := e.ClaudeGlobal()
	switch {
	case err != nil:
		c.Found += fmt.Sprintf("; its own settings cannot be read: %v", err)
	case installed:
		c.Found += "; in " + path + " too, for Claude Code started by hand in watched tmux panes"
	case watchedTmux(e) > 0:
		c.Status = Warn
		c.Found += "; not in " + path + ": Claude Code you start by hand in the watched tmux panes is seen by its screen only"
		c.Fix = "corral integrate claude-code --global adds corral's hooks to its settings (they report only from watched tmux panes)"
	default:
		c.Found += " (for Claude Code started by hand in tmux panes corral watches: corral integrate claude-code --global)"
	}
	return c
}

// geminiHome is where Gemini CLI keeps .gemini, as agents.GeminiHome
// reads it from an environment.
func geminiHome(e *Env) string {
	return agents.GeminiHome([]string{"GEMINI_CLI_HOME=" + e.Getenv("GEMINI_CLI_HOME"), "HOME=" + e.Home})
}

// geminiExtension: Gemini CLI takes corral's hooks from corral's
// extension, which corral integrate gemini installs.
func geminiExtension(e *Env) Check {
	home := geminiHome(e)
	dir := agents.GeminiExtensionDir(home)
	if e.GeminiInstalled(home) {
		return Check{Name: "gemini extension", Status: OK, Found: "corral's extension is in " + dir}
	}
	return Check{Name: "gemini extension", Status: Warn,
		Found: "corral's extension is not installed (" + dir + "): Gemini CLI in corral's panes is seen by its screen only",
		Fix:   "corral integrate gemini (its hooks do nothing outside corral; corral integrate gemini --remove takes it away)"}
}

// geminiTrust: with folder trust on, Gemini CLI loads hooks and
// extensions only in a folder it trusts. The check here is for the
// current folder, where corral run starts a pane by default.
func geminiTrust(e *Env) Check {
	c := Check{Name: "gemini folder trust"}
	files := agents.GeminiFiles{GOOS: e.GOOS, Getenv: e.Getenv, ReadFile: e.ReadFile, RealPath: e.RealPath}
	t, err := agents.GeminiFolderTrust(files, geminiHome(e), e.Cwd)
	switch {
	case errors.Is(err, agents.ErrGeminiSettings):
		c.Status = Warn
		c.Found = err.Error()
		c.Fix = "fix the file: Gemini CLI reads it as JSON with comments"
		return c
	case err != nil:
		c.Status = Fail
		c.Found = t.Setting() + "; " + err.Error() + ": Gemini CLI refuses to start with it"
		c.Fix = "fix " + t.File + ` (an object of "FOLDER": "TRUST_FOLDER" | "TRUST_PARENT" | "DO_NOT_TRUST"), or remove it`
		return c
	}
	switch {
	case !t.On:
		c.Status = OK
		c.Found = t.Setting() + ": hooks and extensions load in every folder"
	case t.Trusted():
		c.Status = OK
		c.Found = fmt.Sprintf("%s; this folder (%s) is trusted (%q: %s in %s)", t.Setting(), t.Folder, t.Rule, t.Level, t.File)
	case t.Level == agents.DoNotTrust:
		c.Status = Warn
		c.Found = fmt.Sprintf("%s; this folder (%s) is not trusted (%q: DO_NOT_TRUST in %s): Gemini CLI started here loads no hooks or extensions, and corral sees it by its screen only", t.Setting(), t.Folder, t.Rule, t.File)
		c.Fix = fmt.Sprintf("trust it in Gemini CLI (/permissions), or change %q to TRUST_FOLDER in %s", t.Rule, t.File)
	default:
		c.Status = Warn
		c.Found = fmt.Sprintf("%s; this folder (%s) is not trusted yet: Gemini CLI asks at its first start here, and until it is trusted loads no hooks or extensions (corral sees it by its screen only)", t.Setting(), t.Folder)
		c.Fix = fmt.Sprintf(`answer Gemini CLI's trust dialog here once, or add "%s": "TRUST_FOLDER" to %s; or set security.folderTrust.enabled to false in %s`, t.Folder, t.File, t.UserSettings)
	}
	return c
}

var versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\d+\.\d+(?:\.\d+)?(?:-[0-9A-Za-z.-]+)?`) })

// versionIn finds the version in what NAME --version printed
// ("2.1.332 (Claude Code)", "codex-cli 0.171.0").
func versionIn(out string) string {
	return versionRE().FindString(out)
}

// compareVersions compares two dotted versions by their numbers; a
// pre-release ("1.2.0-beta.1") comes before its release.
func compareVersions(a, b string) int {
	aNum, aPre, _ := strings.Cut(a, "-")
	bNum, bPre, _ := strings.Cut(b, "-")
	as, bs := strings.Split(aNum, "."), strings.Split(bNum, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch {
	case aPre == bPre:
		return 0
	case aPre == "":
		return 1
	case bPre == "":
		return -1
	}
	return strings.Compare(aPre, bPre)
}
