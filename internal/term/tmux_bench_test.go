package term

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkTmuxBaseline feeds the same agent-like bytes as
// BenchmarkFeedAgentLike through a real tmux server (a pane running cat),
// for a ratio measured in the same run. Each iteration starts a detached
// session at 120x32 and waits until cat has written everything and tmux has
// parsed it. Skipped when tmux is not installed.
func BenchmarkTmuxBaseline(b *testing.B) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		b.Skip("tmux not installed")
	}
	dir := b.TempDir()
	data := bytes.Repeat(agentLike(2000), 20) // ~6 MB: startup cost stays small
	file := filepath.Join(dir, "out.bin")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		b.Fatal(err)
	}
	sock := filepath.Join(dir, "tmux.sock")
	run := func(args ...string) {
		cmd := exec.Command(tmux, append([]string{"-S", sock, "-f", "/dev/null"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("tmux %v: %v: %s", args, err, out)
		}
	}
	defer exec.Command(tmux, "-S", sock, "kill-server").Run()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run("new-session", "-d", "-x", "120", "-y", "32", "cat "+file+"; tmux -S "+sock+" wait-for -S fed")
		run("wait-for", "fed")
		b.StopTimer()
		// The session ends with its command; the server may be gone already.
		exec.Command(tmux, "-S", sock, "kill-server").Run()
		b.StartTimer()
	}
}
