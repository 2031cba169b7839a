package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// initLine is one package's line of GODEBUG=inittrace=1:
// "init github.com/x/y @4.1 ms, 0.06 ms clock, 8480 bytes, 75 allocs".
var initLine = regexp.MustCompile(`^init (\S+) @\S+ ms, \S+ ms clock, (\d+) bytes, (\d+) allocs$`)

// initBytes runs the built binary with GODEBUG=inittrace=1 and returns the
// bytes each package's initialiser allocated.
func initBytes(t *testing.T, args ...string) map[string]int {
	t.Helper()
	cmd := exec.Command(corralBin, args...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	cmd.Stdin = strings.NewReader("") // a holder whose daemon is gone at once: it ends
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("corral %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	out := map[string]int{}
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		m := initLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(m[2])
		if err != nil {
			t.Fatalf("inittrace line %q: %v", sc.Text(), err)
		}
		out[m[1]] += n
	}
	return out
}

// TestHolderInitHeap bounds what the package initialisers of everything
// linked in allocate before a holder's main: every holder process pays it
// (every CLI run too), and a holder with few panes stays below its first
// collection's goal, so those pages stay touched. While the initialisers
// compiled regular expressions and parsed the agent registry it was 918 KiB
// in all, 264 KiB of it corral's own packages; with both done on first
// use, 736 KiB and 82 KiB. The caps leave room for a dependency's update,
// not for eager work to come back.
func TestHolderInitHeap(t *testing.T) {
	t.Parallel()
	const (
		capAll = 850 << 10 // every package, the runtime's and dependencies' included
		capOwn = 128 << 10 // corral's own packages
	)
	pkgs := initBytes(t, "hold")
	all, own := 0, 0
	ours := map[string]int{}
	for p, n := range pkgs {
		all += n
		if strings.HasPrefix(p, "github.com/corral-dev/corral/") {
			own += n
			ours[p] = n
		}
	}
	// A trace that lost its lines (a changed format) must fail, not pass.
	if _, ok := pkgs["github.com/corral-dev/corral/internal/cli"]; !ok || len(pkgs) < 20 {
		t.Fatalf("inittrace gave %d packages, internal/cli not among them: has its format changed?", len(pkgs))
	}
	t.Logf("init: %d KB in all, %d KB in corral's packages, %d packages", all>>10, own>>10, len(pkgs))
	if all > capAll {
		t.Errorf("package initialisers allocate %d KB before a holder's main, more than %d KB; the largest: %s",
			all>>10, capAll>>10, largest(pkgs, 5))
	}
	if own > capOwn {
		t.Errorf("corral's own package initialisers allocate %d KB, more than %d KB (compile regexps and load tables on first use: sync.OnceValue); the largest: %s",
			own>>10, capOwn>>10, largest(ours, 5))
	}
}

// largest names the n packages that allocate most at init, with their bytes.
func largest(pkgs map[string]int, n int) string {
	type pkg struct {
		name  string
		bytes int
	}
	var all []pkg
	for p, b := range pkgs {
		all = append(all, pkg{p, b})
	}
	slices.SortFunc(all, func(a, b pkg) int { return b.bytes - a.bytes })
	var out []string
	for _, p := range all[:min(n, len(all))] {
		out = append(out, p.name+" "+strconv.Itoa(p.bytes))
	}
	return strings.Join(out, ", ")
}
