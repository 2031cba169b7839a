package ruleswatch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/corral-dev/corral/internal/rules"
)

const toy = `
name = "toy"
[[rule]]
id = "busy"
state = "working"
region = "bottom:1"
pattern = 'esc to stop'
`

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestWatchReloads(t *testing.T) {
	dir := t.TempDir()
	l := rules.Loader{Embedded: fstest.MapFS{"toy.toml": {Data: []byte(toy)}}, UserDir: dir}
	set, _ := l.Load(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type update struct {
		set  *rules.Set
		errs []error
	}
	updates := make(chan update, 10)
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, l, set, 20*time.Millisecond, func(s *rules.Set, e []error) { updates <- update{s, e} })
	}()

	await := func(what string, ok func(update) bool) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case u := <-updates:
				if ok(u) {
					return
				}
			case <-deadline:
				t.Fatalf("no reload: %s", what)
			}
		}
	}
	await("the watch is in place", func(update) bool { return true })
	// Write atomically, as editors do: a temporary file renamed over.
	tmp := filepath.Join(dir, ".toy.toml.tmp")
	write(t, tmp, strings.Replace(toy, "esc to stop", "reloaded", 1))
	if err := os.Rename(tmp, filepath.Join(dir, "toy.toml")); err != nil {
		t.Fatal(err)
	}
	await("override", func(u update) bool {
		m, _ := u.set.ByName("toy")
		return len(u.errs) == 0 && m.Classify(rules.Screen{Lines: []string{"reloaded"}}).State == rules.Working
	})
	write(t, filepath.Join(dir, "toy.toml"), "name = [")
	await("broken file", func(u update) bool {
		m, _ := u.set.ByName("toy")
		return len(u.errs) == 1 && m.Classify(rules.Screen{Lines: []string{"reloaded"}}).State == rules.Working
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
