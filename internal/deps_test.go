package internal_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/corral-dev/corral/internal/"

// The pure packages know nothing of processes or sockets, and corral's
// packages depend one way: cmd → server → pane → detect →
// term/rules/status/signal.
// This test fails when an import breaks that.
func TestDependencyBoundaries(t *testing.T) {
	pure := []string{"term", "rules", "status", "signal", "detect"}
	forbidden := []string{"net", "net/http", "os/exec", "syscall", "github.com/creack/pty"}
	// allowed lists the corral packages each package may import directly.
	allowed := map[string][]string{
		"term":          nil,
		"status":        nil,
		"rules":         {"safefile"},
		"signal":        nil,
		"detect":        {"term", "rules", "status", "signal"},
		"replay":        {"detect", "rules", "term"},
		"pane":          {"detect", "holder", "procs", "rules", "signal", "status", "term"},
		"holder":        {"procs"},
		"lab/fakeagent": {"tty"},
		"lab":           {"lab/fakeagent", "pane", "replay", "rules", "signal"},
		"tty":           nil,
		"proctest":      nil,
		"procs":         nil,
		"eventlog":      nil,
		"notify":        {"eventlog"},
		"agents":        {"signal"},
		"api":           {"buildinfo", "eventlog"},
		"client":        {"api"},
		"server":        {"agents", "api", "board", "buildinfo", "detect", "eventlog", "headless", "holder", "notify", "pane", "procs", "rules", "safefile", "signal", "status", "term", "tomlfile"},
		"board":         {"api", "term"},
		"cli":           {"agents", "api", "buildinfo", "client", "headless", "holder", "lab", "lab/fakeagent", "replay", "rules", "server", "status", "tty", "tui", "verify"},
		"headless":      {"procs", "rules", "safefile", "term", "tomlfile"},
		"tomlfile":      nil,
		"safefile":      nil,
		"buildinfo":     nil,
		"tui":           {"api", "client"},
		"lab/mockmodel": nil,
		"verify":        {"agents", "api", "client", "detect", "eventlog", "lab/mockmodel", "replay", "rules", "signal", "status", "term"},
	}
	for pkg, ok := range allowed {
		imports := goList(t, "{{join .Imports \"\\n\"}}", "./"+pkg)
		for _, imp := range imports {
			if isPure(pkg, pure) {
				for _, f := range forbidden {
					if imp == f {
						t.Errorf("internal/%s imports %s: pure packages know nothing of processes or sockets", pkg, imp)
					}
				}
			}
			name, internal := strings.CutPrefix(imp, module)
			if !internal {
				continue
			}
			if !contains(ok, name) {
				t.Errorf("internal/%s imports internal/%s; allowed: %v", pkg, name, ok)
			}
		}
	}
}

func goList(t *testing.T, format, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", format, pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

func isPure(pkg string, pure []string) bool { return contains(pure, pkg) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
