package internal_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/corral-dev/corral/internal/"

// The pure packages know nothing of processes, sockets or the file
// system's watches, and corral's packages depend one way: cmd → server →
// pane → detect → term/rules/status/combine. Every package under internal
// must have a row here, naming the corral packages it imports, no more and
// no fewer: a new package declares its place, and a row never allows what
// a package stopped using.
func TestDependencyBoundaries(t *testing.T) {
	pure := []string{"term", "rules", "status", "combine", "detect", "tomlfile", "agentdef"}
	forbidden := []string{"net", "net/http", "os/exec", "syscall", "github.com/creack/pty", "github.com/fsnotify/fsnotify"}
	allowed := map[string][]string{
		"term":          nil,
		"status":        nil,
		"rules":         {"safefile", "tomlfile"},
		"ruleswatch":    {"api", "rules"},
		"config":        {"notify", "rules", "safefile", "tomlfile"},
		"approval":      {"agents", "api", "headless"},
		"autoapprove":   {"agents", "api", "approval", "combine", "eventlog", "headless", "pane"},
		"combine":       nil,
		"detect":        {"term", "rules", "status", "combine"},
		"replay":        {"detect", "rules", "term"},
		"pane":          {"detect", "holder", "procs", "rawio", "rules", "combine", "status", "term", "osproc"},
		"holder":        {"procs", "rawio", "osproc"},
		"rawio":         nil,
		"lab/fakeagent": {"tty", "osproc"},
		"lab":           {"lab/fakeagent", "pane", "replay", "rules", "combine", "osproc"},
		"tty":           nil,
		"proctest":      nil,
		"osproc":        nil,
		"procs":         {"osproc"},
		"eventlog":      nil,
		"notify":        {"eventlog"},
		"agents":        {"agentdef", "combine", "safefile"},
		"agentdef":      {"tomlfile"},
		"api":           {"buildinfo", "eventlog"},
		"client":        {"api"},
		"httpapi":       {"api", "eventlog", "fleet"},
		"fleet":         {"api", "eventlog", "safefile"},
		"handover":      {"osproc"},
		"roster":        nil,
		"panestore":     {"agentdef", "agents", "api", "combine", "detect", "eventlog", "holder", "osproc", "pane", "procs", "safefile", "status"},
		"paneset":       {"agents", "api", "detect", "eventlog", "holder", "pane", "panestore", "roster", "rules", "safefile", "tmuxctl", "tmuxwatch"},
		"fleetlink":     {"api", "board", "buildinfo", "eventlog", "fleet", "httpapi", "term"},
		"jobs":          {"agentdef", "api", "combine", "detect", "eventlog", "headless", "pane", "rules", "safefile", "term"},
		"server":        {"agents", "api", "autoapprove", "config", "httpapi", "board", "buildinfo", "detect", "eventlog", "fleetlink", "handover", "headless", "holder", "jobs", "notify", "pane", "paneset", "panestore", "procs", "rules", "ruleswatch", "safefile", "combine", "term", "osproc", "worktree"},
		"tmuxwatch":     {"pane", "tmuxctl", "osproc"},
		"worktree":      {"api", "config"},
		"board":         {"api", "term"},
		"cli":           {"agentdef", "agents", "api", "approval", "config", "handover", "osproc", "ruleswatch", "buildinfo", "client", "doctor", "fleet", "headless", "holder", "lab", "lab/fakeagent", "procs", "replay", "rules", "server", "status", "tty", "tui", "verify"},
		"headless":      {"osproc", "procs", "rules", "safefile", "term", "tomlfile"},
		"tomlfile":      nil,
		"safefile":      nil,
		"buildinfo":     nil,
		"tui":           {"api", "client"},
		"lab/mockmodel": nil,
		"tmuxctl":       nil,
		"doctor":        {"agentdef", "agents", "api", "buildinfo", "client", "fleet", "safefile", "tmuxctl"},
		"verify":        {"agentdef", "agents", "api", "client", "detect", "eventlog", "lab/mockmodel", "replay", "rules", "combine", "status", "term"},
	}
	// Every package, with its imports, in one go list.
	seen := map[string]bool{}
	for _, line := range goList(t, "{{.ImportPath}} {{join .Imports \" \"}}", "./...") {
		fields := strings.Fields(line)
		pkg, internal := strings.CutPrefix(fields[0], module)
		if !internal {
			continue // the module root's test package, cmd, rules data
		}
		seen[pkg] = true
		ok, listed := allowed[pkg]
		if !listed {
			t.Errorf("internal/%s has no row in TestDependencyBoundaries: add one naming the corral packages it may import", pkg)
			continue
		}
		for _, name := range ok {
			if !contains(fields[1:], module+name) {
				t.Errorf("the row of internal/%s allows internal/%s, which it does not import: remove it (a row says what a package uses)", pkg, name)
			}
		}
		for _, imp := range fields[1:] {
			if contains(pure, pkg) && contains(forbidden, imp) {
				t.Errorf("internal/%s imports %s: pure packages know nothing of processes, sockets or watches", pkg, imp)
			}
			name, internal := strings.CutPrefix(imp, module)
			if internal && !contains(ok, name) {
				t.Errorf("internal/%s imports internal/%s; allowed: %v", pkg, name, ok)
			}
		}
	}
	for pkg := range allowed {
		if !seen[pkg] {
			t.Errorf("TestDependencyBoundaries has a row for internal/%s, which is gone", pkg)
		}
	}
}

func goList(t *testing.T, format, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", format, pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// maxSourceLines bounds a Go file: past it, a file holds more than one
// concern, and a reader loses the thread.
const maxSourceLines = 600

// Go files, tests too, stay small enough to read whole (generated files
// aside): one past the bound is split by concern, as docs/contributing.md
// says.
func TestSourceFilesStaySmall(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		if n := bytes.Count(b, []byte("\n")); n > maxSourceLines && !bytes.Contains(b, []byte("\n// Code generated ")) {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s has %d lines (at most %d): split it by concern", rel, n, maxSourceLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 200 {
		t.Fatalf("%d Go files under %s: the walk missed the tree", checked, root)
	}
}
