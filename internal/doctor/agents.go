package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/corral-dev/corral/internal/agents"
)

// Agent is an agent CLI corral knows by name.
type Agent struct {
	Name    string // corral's name for it (corral run --agent, corral verify --agent)
	Title   string
	Binary  string // its command on PATH
	Package string // its npm package
	// Verified is the version corral verify last passed, as docs/agents.md
	// lists it ("Versions", pinned in internal/verify's Profiles). A test
	// keeps the two in step.
	Verified string
}

// Agents are the agent CLIs corral verify covers.
var Agents = []Agent{
	{Name: "claude-code", Title: "Claude Code", Binary: "claude", Package: "@anthropic-ai/claude-code", Verified: "2.1.332"},
	{Name: "codex", Title: "Codex", Binary: "codex", Package: "@openai/codex", Verified: "0.171.0"},
	{Name: "gemini", Title: "Gemini CLI", Binary: "gemini", Package: "@google/gemini-cli", Verified: "0.61.0"},
	{Name: "qwen-code", Title: "Qwen Code", Binary: "qwen", Package: "@qwen-code/qwen-code", Verified: "0.15.10"},
	{Name: "opencode", Title: "opencode", Binary: "opencode", Package: "opencode-ai", Verified: "1.18.33"},
	{Name: "copilot", Title: "Copilot CLI", Binary: "copilot", Package: "@github/copilot", Verified: "1.0.102"},
}

// agentChecks: each agent CLI on PATH, its version against the one
// verified, and how its hooks reach corral. The --version runs go at
// once, each bounded by CommandTimeout.
func agentChecks(ctx context.Context, e *Env) []Check {
	results := make([][]Check, len(Agents))
	var wg sync.WaitGroup
	for i, a := range Agents {
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
	switch a.Name {
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

// Gemini CLI's trust levels (trustedFolders.json).
const (
	trustFolder = "TRUST_FOLDER"
	trustParent = "TRUST_PARENT"
	doNotTrust  = "DO_NOT_TRUST"
)

// geminiTrust: with folder trust on, Gemini CLI loads hooks and
// extensions only in a folder it trusts. Recent versions check trust
// unless security.folderTrust.enabled is false; the check here is for the
// current folder, where corral run starts a pane by default.
func geminiTrust(e *Env) Check {
	c := Check{Name: "gemini folder trust"}
	home := geminiHome(e)
	userSettings := filepath.Join(home, ".gemini", "settings.json")
	system := e.Getenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
	if system == "" {
		system = "/etc/gemini-cli/settings.json"
		if e.GOOS == "darwin" {
			system = "/Library/Application Support/GeminiCli/settings.json"
		}
	}
	// The system settings override the user's.
	var enabled *bool
	var from string
	for _, p := range []string{userSettings, system} {
		v, err := folderTrustSetting(e, p)
		if err != nil {
			c.Status = Warn
			c.Found = err.Error()
			c.Fix = "fix the file: Gemini CLI reads it as JSON with comments"
			return c
		}
		if v != nil {
			enabled, from = v, p
		}
	}
	if enabled != nil && !*enabled {
		c.Status = OK
		c.Found = "off (security.folderTrust.enabled is false in " + from + "): hooks and extensions load in every folder"
		return c
	}
	setting := "on (security.folderTrust.enabled is true in " + from + ")"
	if enabled == nil {
		setting = "on by default in recent Gemini CLI versions (security.folderTrust.enabled is not set)"
	}

	trustFile := e.Getenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
	if trustFile == "" {
		trustFile = filepath.Join(home, ".gemini", "trustedFolders.json")
	}
	rules, err := readTrustFile(e, trustFile)
	if err != nil {
		c.Status = Fail
		c.Found = setting + "; " + err.Error() + ": Gemini CLI refuses to start with it"
		c.Fix = "fix " + trustFile + ` (an object of "FOLDER": "TRUST_FOLDER" | "TRUST_PARENT" | "DO_NOT_TRUST"), or remove it`
		return c
	}
	cwd := e.Cwd
	level, rule := trustOf(e, rules, cwd)
	switch level {
	case trustFolder, trustParent:
		c.Status = OK
		c.Found = fmt.Sprintf("%s; this folder (%s) is trusted (%q: %s in %s)", setting, cwd, rule, level, trustFile)
	case doNotTrust:
		c.Status = Warn
		c.Found = fmt.Sprintf("%s; this folder (%s) is not trusted (%q: DO_NOT_TRUST in %s): Gemini CLI started here loads no hooks or extensions, and corral sees it by its screen only", setting, cwd, rule, trustFile)
		c.Fix = fmt.Sprintf("trust it in Gemini CLI (/permissions), or change %q to TRUST_FOLDER in %s", rule, trustFile)
	default:
		c.Status = Warn
		c.Found = fmt.Sprintf("%s; this folder (%s) is not trusted yet: Gemini CLI asks at its first start here, and until it is trusted loads no hooks or extensions (corral sees it by its screen only)", setting, cwd)
		c.Fix = fmt.Sprintf(`answer Gemini CLI's trust dialog here once, or add "%s": "TRUST_FOLDER" to %s; or set security.folderTrust.enabled to false in %s`, cwd, trustFile, userSettings)
	}
	return c
}

// folderTrustSetting reads security.folderTrust.enabled from a Gemini CLI
// settings file: nil when the file or the key is not there.
func folderTrustSetting(e *Env, path string) (*bool, error) {
	b, err := e.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("Gemini CLI's settings %s cannot be read: %v", path, err)
	}
	var s struct {
		Security struct {
			FolderTrust struct {
				Enabled *bool `json:"enabled"`
			} `json:"folderTrust"`
		} `json:"security"`
	}
	if err := json.Unmarshal(stripJSONComments(b), &s); err != nil {
		return nil, fmt.Errorf("Gemini CLI's settings %s: %v", path, err)
	}
	return s.Security.FolderTrust.Enabled, nil
}

// readTrustFile reads Gemini CLI's trusted folders: FOLDER → level.
func readTrustFile(e *Env, path string) (map[string]string, error) {
	b, err := e.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read: %v", path, err)
	}
	var rules map[string]string
	if err := json.Unmarshal(stripJSONComments(b), &rules); err != nil {
		return nil, fmt.Errorf("%s is not an object of folders and trust levels: %v", path, err)
	}
	for p, level := range rules {
		if level != trustFolder && level != trustParent && level != doNotTrust {
			return nil, fmt.Errorf("%s: %q has the trust level %q", path, p, level)
		}
	}
	return rules, nil
}

// trustOf is Gemini CLI's isPathTrusted: of the rules whose folder
// (TRUST_PARENT: the folder above the one named) holds dir, after
// resolving links, the one with the longest path as written decides.
func trustOf(e *Env, rules map[string]string, dir string) (level, rule string) {
	real := e.RealPath(dir)
	paths := make([]string, 0, len(rules))
	for p := range rules {
		paths = append(paths, p)
	}
	sort.Strings(paths) // ties go the same way every time
	best := -1
	for _, p := range paths {
		root := p
		if rules[p] == trustParent {
			root = filepath.Dir(p)
		}
		if within(real, e.RealPath(root)) && len(p) > best {
			best, level, rule = len(p), rules[p], p
		}
	}
	return level, rule
}

// within reports whether path is root or under it.
func within(path, root string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// stripJSONComments blanks // and /* */ comments outside strings, as
// Gemini CLI does before it parses its JSON files.
func stripJSONComments(b []byte) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	inString := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			out[i], out[i+1] = ' ', ' '
			for i += 2; i < len(out); i++ {
				if out[i] == '*' && i+1 < len(out) && out[i+1] == '/' {
					out[i], out[i+1] = ' ', ' '
					i++
					break
				}
				if out[i] != '\n' {
					out[i] = ' '
				}
			}
		}
	}
	return out
}

var versionRE = regexp.MustCompile(`\d+\.\d+(?:\.\d+)?(?:-[0-9A-Za-z.-]+)?`)

// versionIn finds the version in what NAME --version printed
// ("2.1.332 (Claude Code)", "codex-cli 0.171.0").
func versionIn(out string) string {
	return versionRE.FindString(out)
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
