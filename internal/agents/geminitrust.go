package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/corral-dev/corral/internal/safefile"
)

// Gemini CLI's trust levels (trustedFolders.json).
const (
	TrustFolder = "TRUST_FOLDER"
	TrustParent = "TRUST_PARENT"
	DoNotTrust  = "DO_NOT_TRUST"
)

// GeminiFiles is how the folder-trust check reads the machine: the real
// one for a launch, a fake one in tests.
type GeminiFiles struct {
	GOOS     string
	Getenv   func(key string) string
	ReadFile func(path string) ([]byte, error)
	// RealPath resolves symbolic links; it returns p itself when it cannot.
	RealPath func(p string) string
}

// OSGeminiFiles reads this machine's files for a program with
// environment env.
func OSGeminiFiles(goos string, env []string) GeminiFiles {
	return GeminiFiles{
		GOOS:   goos,
		Getenv: func(k string) string { return lookup(env, k) },
		// Settings are small; a FIFO or a device in their place must not
		// block a launch.
		ReadFile: func(p string) ([]byte, error) { return safefile.Read(p, 1<<20) },
		RealPath: func(p string) string {
			if r, err := filepath.EvalSymlinks(p); err == nil {
				return r
			}
			return p
		},
	}
}

// GeminiTrust is what Gemini CLI's folder trust says of one folder. With
// folder trust on, Gemini CLI loads hooks and extensions only in a folder
// it trusts; recent versions turn it on unless
// security.folderTrust.enabled is false.
type GeminiTrust struct {
	On bool
	// From is the settings file that turned it on or off ("": not set,
	// Gemini CLI's default, on).
	From         string
	UserSettings string // the user's settings file, where it can be turned off
	File         string // the trusted folders file
	Folder       string
	// Level is the folder's: TrustFolder, TrustParent, DoNotTrust, or ""
	// (not decided yet: Gemini CLI asks at its first start there).
	Level string
	Rule  string // the entry of File that decided Level
}

// Trusted reports whether Gemini CLI loads hooks in the folder.
func (t GeminiTrust) Trusted() bool {
	return !t.On || t.Level == TrustFolder || t.Level == TrustParent
}

// Setting says whether folder trust is on, and where that was decided.
func (t GeminiTrust) Setting() string {
	switch {
	case !t.On:
		return "off (security.folderTrust.enabled is false in " + t.From + ")"
	case t.From == "":
		return "on by default in recent Gemini CLI versions (security.folderTrust.enabled is not set)"
	}
	return "on (security.folderTrust.enabled is true in " + t.From + ")"
}

// Problem says why Gemini CLI started in the folder loads none of corral's
// hooks, and what to do; "" when it does.
func (t GeminiTrust) Problem() string {
	switch {
	case t.Trusted():
		return ""
	case t.Level == DoNotTrust:
		return fmt.Sprintf("Gemini CLI loads no hooks in %s: its folder trust marks it %q (DO_NOT_TRUST in %s); "+
			"trust it in Gemini CLI (/permissions) or change that entry to TRUST_FOLDER, then restart it in its pane",
			t.Folder, t.Rule, t.File)
	}
	return fmt.Sprintf("Gemini CLI loads no hooks in %s until it trusts the folder: answer its trust dialog and restart it in its pane, "+
		`or add "%s": "TRUST_FOLDER" to %s, or set security.folderTrust.enabled to false in %s`,
		t.Folder, t.Folder, t.File, t.UserSettings)
}

// ErrGeminiSettings wraps an unreadable Gemini CLI settings file; other
// errors of GeminiFolderTrust are about the trusted folders file, with
// which Gemini CLI refuses to start.
var ErrGeminiSettings = errors.New("Gemini CLI's settings")

// GeminiFolderTrust reads Gemini CLI's folder trust for folder, as Gemini
// CLI under home would.
func GeminiFolderTrust(r GeminiFiles, home, folder string) (GeminiTrust, error) {
	t := GeminiTrust{On: true, Folder: folder, UserSettings: filepath.Join(home, ".gemini", "settings.json")}
	system := r.Getenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
	if system == "" {
		system = "/etc/gemini-cli/settings.json"
		if r.GOOS == "darwin" {
			system = "/Library/Application Support/GeminiCli/settings.json"
		}
	}
	// The system settings override the user's.
	for _, p := range []string{t.UserSettings, system} {
		v, err := folderTrustSetting(r, p)
		if err != nil {
			return t, err
		}
		if v != nil {
			t.On, t.From = *v, p
		}
	}
	if !t.On {
		return t, nil
	}
	t.File = r.Getenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
	if t.File == "" {
		t.File = filepath.Join(home, ".gemini", "trustedFolders.json")
	}
	rules, err := readTrustFile(r, t.File)
	if err != nil {
		return t, err
	}
	t.Level, t.Rule = trustOf(r, rules, folder)
	return t, nil
}

// folderTrustSetting reads security.folderTrust.enabled from a Gemini CLI
// settings file: nil when the file or the key is not there.
func folderTrustSetting(r GeminiFiles, path string) (*bool, error) {
	b, err := r.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s cannot be read: %v", ErrGeminiSettings, path, err)
	}
	var s struct {
		Security struct {
			FolderTrust struct {
				Enabled *bool `json:"enabled"`
			} `json:"folderTrust"`
		} `json:"security"`
	}
	if err := json.Unmarshal(StripJSONComments(b), &s); err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrGeminiSettings, path, err)
	}
	return s.Security.FolderTrust.Enabled, nil
}

// readTrustFile reads Gemini CLI's trusted folders: FOLDER → level.
func readTrustFile(r GeminiFiles, path string) (map[string]string, error) {
	b, err := r.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read: %v", path, err)
	}
	var rules map[string]string
	if err := json.Unmarshal(StripJSONComments(b), &rules); err != nil {
		return nil, fmt.Errorf("%s is not an object of folders and trust levels: %v", path, err)
	}
	for p, level := range rules {
		if level != TrustFolder && level != TrustParent && level != DoNotTrust {
			return nil, fmt.Errorf("%s: %q has the trust level %q", path, p, level)
		}
	}
	return rules, nil
}

// trustOf is Gemini CLI's isPathTrusted: of the rules whose folder
// (TRUST_PARENT: the folder above the one named) holds dir, after
// resolving links, the one with the longest path as written decides.
func trustOf(r GeminiFiles, rules map[string]string, dir string) (level, rule string) {
	real := r.RealPath(dir)
	paths := make([]string, 0, len(rules))
	for p := range rules {
		paths = append(paths, p)
	}
	sort.Strings(paths) // ties go the same way every time
	best := -1
	for _, p := range paths {
		root := p
		if rules[p] == TrustParent {
			root = filepath.Dir(p)
		}
		if within(real, r.RealPath(root)) && len(p) > best {
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

// StripJSONComments blanks // and /* */ comments outside strings, as
// Gemini CLI does before it parses its JSON files.
func StripJSONComments(b []byte) []byte {
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

// geminiUntrusted says why Gemini CLI launched in cwd with environment
// env would load none of corral's hooks because of its folder trust; ""
// when it would load them or that cannot be known.
func geminiUntrusted(env []string, cwd string) string {
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	t, err := GeminiFolderTrust(OSGeminiFiles(runtime.GOOS, env), GeminiHome(env), cwd)
	if err != nil {
		return "" // Gemini CLI says so itself: it refuses to start
	}
	return t.Problem()
}
