package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/agents"
)

func TestSocketPathTooLong(t *testing.T) {
	f := newFake()
	long := "/run/user/1000/" + strings.Repeat("x", 100)
	f.dirs[long] = FileInfo{IsDir: true, UID: 1000, Mode: fs.ModeDir | 0o700}
	env := f.Env()
	env.SocketPath = long + "/corral.sock"
	env.StateDir = long
	var got []Check
	for _, c := range Run(context.Background(), env).Checks {
		if c.Name == "socket folder" || c.Name == "state folder" {
			got = append(got, c)
		}
	}
	for _, c := range got {
		if c.Status != Fail || !strings.Contains(c.Found, "unix socket") || !strings.Contains(c.Fix, "shorter") {
			t.Errorf("%+v", c)
		}
	}
}

// The report's JSON is {"checks": [{"name", "status", "found", "fix"}…],
// "ok"}, every key always there; ok is false only when a check failed.
func TestReportJSONAndOK(t *testing.T) {
	f := newFake()
	f.agent("claude", "2.1.332")
	r := Run(context.Background(), f.Env())
	if !r.OK {
		t.Fatalf("a report with warnings only is not ok: %+v", r)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw) != 2 || raw["ok"] != true {
		t.Fatalf("keys: %v", raw)
	}
	checks := raw["checks"].([]any)
	if len(checks) < 10 {
		t.Fatalf("only %d checks", len(checks))
	}
	for _, c := range checks {
		m := c.(map[string]any)
		if len(m) != 4 {
			t.Errorf("check %v: want exactly name, status, found, fix", m)
		}
		for _, k := range []string{"name", "status", "found", "fix"} {
			if _, ok := m[k].(string); !ok {
				t.Errorf("check %v lacks %q", m, k)
			}
		}
		switch Status(m["status"].(string)) {
		case OK, Warn, Fail, Skip:
		default:
			t.Errorf("check %v: unknown status", m)
		}
	}
	f.notifyE = errors.New("broken")
	r = Run(context.Background(), f.Env())
	if r.OK {
		t.Fatal("a failed check left the report ok")
	}
	if fails, _ := r.Counts(); fails != 1 {
		t.Fatalf("%d failures", fails)
	}
}

func TestWriteText(t *testing.T) {
	r := Report{Checks: []Check{
		{Name: "system", Status: OK, Found: "linux/amd64"},
		{Name: "state folder", Status: Fail, Found: "/x: others can write", Fix: "chmod 700 /x"},
		{Name: "tmux", Status: Skip, Found: "not on PATH", Fix: "install tmux"},
		{Name: "daemon", Status: Warn, Found: "not running", Fix: "corral serve\nor corral ls"},
	}}
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	want := `ok    system        linux/amd64
fail  state folder  /x: others can write
                    fix: chmod 700 /x
skip  tmux          not on PATH
warn  daemon        not running
                    fix: corral serve
                         or corral ls

1 failure, 1 warning: fix the failures first
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	WriteText(&b, Report{Checks: []Check{{Name: "system", Status: OK, Found: "linux/amd64"}}, OK: true})
	if !strings.HasSuffix(b.String(), "\nall good\n") {
		t.Errorf("got:\n%s", b.String())
	}
	b.Reset()
	WriteText(&b, Report{Checks: []Check{{Name: "a", Status: Warn, Found: "x", Fix: "y"}, {Name: "b", Status: Warn, Found: "x", Fix: "y"}}, OK: true})
	if !strings.HasSuffix(b.String(), "\n2 warnings: nothing failed\n") {
		t.Errorf("got:\n%s", b.String())
	}
}

// The table of verified versions is docs/agents.md's.
func TestAgentsMatchTheDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/agents.md")
	if err != nil {
		t.Fatal(err)
	}
	_, versions, ok := strings.Cut(string(b), "\n## Versions\n")
	if !ok {
		t.Fatal("docs/agents.md has no Versions section")
	}
	versions, _, _ = strings.Cut(versions, "\n## ")
	row := regexp.MustCompile("(?m)^\\| ([^|]+) \\| `([^`]+)` \\| ([^ |]+) \\|")
	docs := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(versions, -1) {
		docs[m[2]] = m[3]
	}
	if len(docs) != len(Agents()) {
		t.Errorf("docs/agents.md lists %d agents (%v), doctor %d", len(docs), docs, len(Agents()))
	}
	for _, a := range Agents() {
		if docs[a.Package] != a.Verified {
			t.Errorf("%s: doctor says %s was verified, docs/agents.md %q", a.Package, a.Verified, docs[a.Package])
		}
	}
}

func TestVersions(t *testing.T) {
	for _, tt := range []struct {
		out, want string
	}{
		{"2.1.332 (Claude Code)\n", "2.1.332"},
		{"codex-cli 0.171.0\n", "0.171.0"},
		{"GitHub Copilot CLI 1.0.102.\nRun 'copilot update' to check for updates.\n", "1.0.102"},
		{"0.62.0-nightly.20250601\n", "0.62.0-nightly.20250601"},
		{"no version here\n", ""},
	} {
		if got := versionIn(tt.out); got != tt.want {
			t.Errorf("versionIn(%q) = %q; want %q", tt.out, got, tt.want)
		}
	}
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"1.2.3", "1.2.3", 0}, {"1.10.0", "1.9.9", 1}, {"0.9", "0.9.1", -1},
		{"1.0.0-beta", "1.0.0", -1}, {"1.0.0", "1.0.0-beta", 1}, {"2.0.0", "10.0.0", -1},
	} {
		if got := compareVersions(tt.a, tt.b); got != tt.want {
			t.Errorf("compareVersions(%s, %s) = %d; want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestStripJSONComments(t *testing.T) {
	in := "{\n // a comment \"with quotes\"\n \"a\": \"http://x/*not*/\", /* block\n comment */ \"b\": \"\\\"//\"\n}"
	var v map[string]string
	if err := json.Unmarshal(agents.StripJSONComments([]byte(in)), &v); err != nil {
		t.Fatalf("%v\n%s", err, agents.StripJSONComments([]byte(in)))
	}
	if v["a"] != "http://x/*not*/" || v["b"] != `"//` {
		t.Fatalf("%v", v)
	}
}

// The real command runner gives up at its timeout even when what it ran
// never ends and leaves a child holding its output open, and gives it no
// terminal and an empty stdin.
func TestRunCommandNeverHangs(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	start := time.Now()
	_, err := runCommand(context.Background(), 300*time.Millisecond, "sh", "-c", "sleep 30 & sleep 30")
	if err == nil || !strings.Contains(err.Error(), "no answer within") {
		t.Errorf("err %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v", d)
	}
	out, err := runCommand(context.Background(), 5*time.Second, "sh", "-c", "cat; echo 1.2.3; test -t 0 || echo no-tty; (: </dev/tty) 2>/dev/null || echo no-ctty")
	if err != nil || !strings.Contains(out, "1.2.3") || !strings.Contains(out, "no-tty") || !strings.Contains(out, "no-ctty") {
		t.Errorf("%q %v", out, err)
	}
}

// Every hooks integration an agent.toml names has its checks here, and an
// agent without one says corral reads its screen.
func TestEveryIntegrationHasChecks(t *testing.T) {
	for _, a := range Agents() {
		t.Run(a.Name, func(t *testing.T) {
			f := newFake()
			f.agent(a.Binary, a.Verified)
			cs := agentCheck(context.Background(), f.Env(), a)
			if cs[0].Status != OK {
				t.Errorf("%s %s: %+v", a.Binary, a.Verified, cs[0])
			}
			switch {
			case a.Integration != "" && len(cs) < 2:
				t.Errorf("integration %q has no checks in agentCheck: add them", a.Integration)
			case a.Integration == "" && (len(cs) != 1 || !strings.Contains(cs[0].Found, "it has no hooks")):
				t.Errorf("no integration, checks %+v", cs)
			}
		})
	}
}
