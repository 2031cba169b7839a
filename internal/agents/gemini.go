package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Gemini CLI hook events corral listens to.
var geminiEvents = []string{"Notification", "BeforeAgent", "AfterAgent", "AfterTool", "SessionEnd"}

// Gemini CLI takes hooks from its settings layers and from its extensions
// (~/.gemini/extensions/NAME/hooks/hooks.json). The one settings layer
// corral could add without touching the user's files, the system defaults
// file named by GEMINI_CLI_SYSTEM_DEFAULTS_PATH, is skipped unless the file
// and every folder above it are owned by root and writable by nobody else,
// so for an ordinary user the way in is an extension, installed once on
// request (corral integrate gemini). Its hook does nothing outside corral.
//
// Both carry the same hook. Gemini CLI runs hooks with bash -c and a
// sanitised environment that may drop names with TOKEN in them but always
// keeps names starting with GEMINI_CLI_, so the pane's hook variables
// travel under that prefix.
const geminiHookCommand = `[ -z "$GEMINI_CLI_CORRAL_HOOK" ] || CORRAL_PANE="$GEMINI_CLI_CORRAL_PANE" ` +
	`CORRAL_TOKEN="$GEMINI_CLI_CORRAL_TOKEN" CORRAL_SOCKET="$GEMINI_CLI_CORRAL_SOCKET" "$GEMINI_CLI_CORRAL_HOOK" hook --agent gemini`

// GeminiExtension is the name of corral's Gemini CLI extension.
const GeminiExtension = "corral"

// geminiHooks is the hooks object both ways carry.
func geminiHooks() map[string]any {
	entry := []map[string]any{{"matcher": "*", "hooks": []map[string]any{{"name": "corral", "type": "command",
		"command": geminiHookCommand, "timeout": 10000}}}}
	hooks := map[string]any{}
	for _, ev := range geminiEvents {
		hooks[ev] = entry
	}
	return hooks
}

func geminiHooksFile() []byte {
	b, _ := json.MarshalIndent(map[string]any{"hooks": geminiHooks()}, "", "  ")
	return append(b, '\n')
}

// GeminiHome is the folder Gemini CLI keeps .gemini in, for a program
// with environment env: $GEMINI_CLI_HOME, else $HOME.
func GeminiHome(env []string) string {
	if h := lookup(env, "GEMINI_CLI_HOME"); h != "" {
		return h
	}
	if h := lookup(env, "HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// GeminiExtensionDir is where corral's extension lives under home.
func GeminiExtensionDir(home string) string {
	return filepath.Join(home, ".gemini", "extensions", GeminiExtension)
}

// GeminiInstalled reports whether corral's extension is under home.
func GeminiInstalled(home string) bool {
	b, err := os.ReadFile(filepath.Join(GeminiExtensionDir(home), "hooks", "hooks.json"))
	return err == nil && bytes.Contains(b, []byte("GEMINI_CLI_CORRAL_HOOK"))
}

// InstallGemini writes corral's Gemini CLI extension under home and
// returns its folder. It only adds that folder: corral integrate gemini
// --remove (RemoveGemini) takes it away.
func InstallGemini(home string) (string, error) {
	dir := GeminiExtensionDir(home)
	if exists(dir) && !GeminiInstalled(home) {
		return dir, fmt.Errorf("%s exists and is not corral's Gemini extension; move it away first", dir)
	}
	manifest, _ := json.MarshalIndent(map[string]any{"name": GeminiExtension, "version": "1.0.0",
		"description": "Reports Gemini CLI's state to corral (hooks that do nothing outside a corral pane). Remove with: corral integrate gemini --remove"}, "", "  ")
	files := map[string][]byte{
		filepath.Join(dir, "gemini-extension.json"): append(manifest, '\n'),
		filepath.Join(dir, "hooks", "hooks.json"):   geminiHooksFile(),
	}
	for path, data := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return dir, fmt.Errorf("install corral's Gemini extension: %w", err)
		}
		if err := writeAtomic(path, data, 0o644); err != nil {
			return dir, fmt.Errorf("install corral's Gemini extension: %w", err)
		}
	}
	return dir, nil
}

// RemoveGemini removes corral's Gemini CLI extension from home; removed is
// false when it was not there.
func RemoveGemini(home string) (dir string, removed bool, err error) {
	dir = GeminiExtensionDir(home)
	if !exists(dir) {
		return dir, false, nil
	}
	if !GeminiInstalled(home) {
		return dir, false, fmt.Errorf("%s is not corral's Gemini extension; left alone", dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return dir, false, fmt.Errorf("remove corral's Gemini extension: %w", err)
	}
	return dir, true, nil
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

const geminiOptIn = "run corral integrate gemini once to add corral's Gemini extension (corral integrate gemini --remove takes it away)"

// geminiRun is Gemini CLI's part of IntegrateRun: environment for the
// extension, or for a system defaults file Gemini CLI will accept, or the
// reason there is neither.
func geminiRun(f Found, argv []string, o Options) (env, files []string, problem string, watch bool) {
	if len(o.Hook) == 0 {
		return nil, nil, "corral could not find its own executable for the hook", false
	}
	vars := []string{"GEMINI_CLI_CORRAL_HOOK=" + o.Hook[0], "GEMINI_CLI_CORRAL_PANE=" + lookup(o.Env, "CORRAL_PANE"),
		"GEMINI_CLI_CORRAL_TOKEN=" + lookup(o.Env, "CORRAL_TOKEN"), "GEMINI_CLI_CORRAL_SOCKET=" + lookup(o.Env, "CORRAL_SOCKET")}
	home := GeminiHome(o.Env)
	if GeminiInstalled(home) {
		if p := geminiExtensionOff(home, o.Cwd, f, argv); p != "" {
			return nil, nil, p, false
		}
		return vars, nil, "", false
	}
	if lookup(o.Env, "GEMINI_CLI_SYSTEM_DEFAULTS_PATH") != "" {
		return nil, nil, "Gemini CLI hooks are not added: GEMINI_CLI_SYSTEM_DEFAULTS_PATH is yours; " + geminiOptIn, false
	}
	sys := "/etc/gemini-cli/settings.json"
	if p := lookup(o.Env, "GEMINI_CLI_SYSTEM_SETTINGS_PATH"); p != "" {
		sys = p
	}
	if machine := filepath.Join(filepath.Dir(sys), "system-defaults.json"); exists(machine) {
		return nil, nil, "Gemini CLI hooks are not added: the machine has its own " + machine + "; " + geminiOptIn, false
	}
	if o.Dir == "" {
		return nil, nil, "Gemini CLI hooks are not added: " + geminiOptIn, false
	}
	data, _ := json.MarshalIndent(map[string]any{"hooks": geminiHooks()}, "", "  ")
	path := filepath.Join(o.Dir, "gemini-system-defaults.json")
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, nil, fmt.Sprintf("Gemini CLI hooks are not added (%v); %s", err, geminiOptIn), false
	}
	// Gemini CLI's test, folders first: no file is written where it would
	// be refused anyway.
	for _, dir := range ancestors(o.Dir) {
		if err := securePath(dir, true); err != nil {
			return nil, nil, fmt.Sprintf("Gemini CLI would skip corral's settings file (folder %s: %v); %s", dir, err, geminiOptIn), false
		}
	}
	if err := writeAtomic(path, data, 0o600); err != nil {
		return nil, nil, fmt.Sprintf("Gemini CLI hooks are not added (%v); %s", err, geminiOptIn), false
	}
	if err := GeminiSystemFileCheck(path); err != nil {
		return nil, nil, fmt.Sprintf("Gemini CLI would skip corral's settings file (%v); %s", err, geminiOptIn), false
	}
	return append(vars, "GEMINI_CLI_SYSTEM_DEFAULTS_PATH="+path), nil, "", true
}

// geminiExtensionOff says why Gemini CLI would leave corral's extension
// out of a run in cwd with this command line, or "".
func geminiExtensionOff(home, cwd string, f Found, argv []string) string {
	if f.Agent == "gemini" {
		var list []string
		named := false
		for i := f.At; i < len(argv); i++ {
			w := argv[i]
			switch {
			case w == "-e" || w == "--extensions":
				named = true
				if i+1 < len(argv) {
					list = append(list, strings.Split(argv[i+1], ",")...)
					i++
				}
			case strings.HasPrefix(w, "--extensions=") || strings.HasPrefix(w, "-e="):
				named = true
				_, v, _ := strings.Cut(w, "=")
				list = append(list, strings.Split(v, ",")...)
			}
		}
		if named && !containsFold(list, GeminiExtension) {
			return "Gemini CLI's --extensions list on its command line leaves out corral's extension: add " + GeminiExtension + " to it"
		}
	}
	b, err := os.ReadFile(filepath.Join(home, ".gemini", "extensions", "extension-enablement.json"))
	if err != nil {
		return ""
	}
	var cfg map[string]struct{ Overrides []string }
	if json.Unmarshal(b, &cfg) != nil {
		return ""
	}
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	p := "/" + strings.Trim(filepath.ToSlash(cwd), "/") + "/"
	if p == "//" {
		p = "/"
	}
	enabled := true
	for _, rule := range cfg[GeminiExtension].Overrides {
		disable := strings.HasPrefix(rule, "!")
		base := strings.TrimPrefix(rule, "!")
		subdirs := strings.HasSuffix(base, "*")
		base = strings.TrimSuffix(base, "*")
		if p == base || subdirs && strings.HasPrefix(p, base) {
			enabled = !disable
		}
	}
	if !enabled {
		return "corral's Gemini extension is disabled for " + cwd + ": gemini extensions enable " + GeminiExtension
	}
	return ""
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(strings.TrimSpace(v), s) {
			return true
		}
	}
	return false
}

// GeminiSystemFileCheck is Gemini CLI's test of a system settings file
// (isFileAndDirectorySecureSync in @google/gemini-cli-core, POSIX side):
// the file and every folder above it, and the same for where links lead,
// must be owned by root and not writable by group or others, and a link
// on the way must itself be owned by root. nil means Gemini CLI loads it.
func GeminiSystemFileCheck(path string) error {
	p, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if _, err := os.Stat(p); err != nil {
		return err
	}
	canonical := p
	if r, err := filepath.EvalSymlinks(p); err == nil {
		canonical = r
	}
	for _, dir := range ancestors(filepath.Dir(p)) {
		if err := securePath(dir, true); err != nil {
			return fmt.Errorf("folder %s: %w", dir, err)
		}
	}
	if err := securePath(p, false); err != nil {
		return fmt.Errorf("file %s: %w", p, err)
	}
	if canonical != p {
		if err := securePath(canonical, false); err != nil {
			return fmt.Errorf("file %s: %w", canonical, err)
		}
		for _, dir := range ancestors(filepath.Dir(canonical)) {
			if err := securePath(dir, true); err != nil {
				return fmt.Errorf("folder %s: %w", dir, err)
			}
		}
	}
	return nil
}

func ancestors(dir string) []string {
	out := []string{dir}
	for {
		next := filepath.Dir(dir)
		if next == dir {
			return out
		}
		out = append(out, next)
		dir = next
	}
}

func securePath(p string, dir bool) error {
	if li, err := os.Lstat(p); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		if st, ok := li.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
			return fmt.Errorf("a link owned by uid %d, not root", st.Uid)
		}
	}
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if dir && !fi.IsDir() {
		return errors.New("not a folder")
	}
	if !dir && !fi.Mode().IsRegular() {
		return errors.New("not a file")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
		return fmt.Errorf("owned by uid %d, not root", st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("writable by group or others (mode %o)", fi.Mode().Perm())
	}
	return nil
}

// ScreenProblem reads an agent's screen for its refusal of corral's
// integration, and says what happened, or "".
func ScreenProblem(agent string, lines []string) string {
	if agent != "gemini" {
		return ""
	}
	const warning = "Skipping system defaults file"
	for i, l := range lines {
		// A narrow screen wraps the warning: look across two rows.
		joined := l
		if i+1 < len(lines) {
			joined += lines[i+1]
		}
		if strings.Contains(joined, warning) {
			said := strings.Join(strings.Fields(joined), " ")
			if r := []rune(said); len(r) > 160 {
				said = string(r[:160]) + "…"
			}
			return "Gemini CLI skipped corral's hooks (its screen says: " + said + "); " + geminiOptIn
		}
	}
	return ""
}
