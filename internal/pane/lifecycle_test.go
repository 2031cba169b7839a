package pane

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// sleeping returns the live processes running sleep with this argument.
func sleeping(arg string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		st, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if string(b) == "sleep\x00"+arg+"\x00" && !strings.Contains(string(st), ") Z ") {
			out = append(out, pid)
		}
	}
	return out
}

// Close ends a pane whose grandchild left with setsid (and holds the
// terminal open) at once, and leaves nothing.
func TestCloseEndsSetsidGrandchild(t *testing.T) {
	t.Parallel()
	p, err := Start(Config{ID: "lc1", Argv: []string{"sh", "-c", "setsid sleep 33.1 & sleep 33.2"}, Env: []string{"CORRAL_PANE=lc1"}, Rules: ruleSet(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !proctest.WaitFor(5*time.Second, func() bool { return len(sleeping("33.1")) > 0 }) {
		t.Fatal("the grandchild never started")
	}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		p.Close(time.Second)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for the terminal's end of file")
	}
	t.Logf("Close took %v", time.Since(start))
	if !proctest.WaitFor(2*time.Second, func() bool { return len(sleeping("33.1"))+len(sleeping("33.2")) == 0 }) {
		t.Fatalf("left behind: %v %v", sleeping("33.1"), sleeping("33.2"))
	}
}

// A command is found where the caller typed it: relative to the pane's
// folder, or on the PATH it was given.
func TestStartResolvesCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := proctest.WriteExecutable(dir+"/tool", []byte("#!/bin/sh\nexit 0\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		argv0, dir string
		env        []string
	}{
		{"./tool", dir, nil},
		{"tool", "/", []string{"PATH=" + dir}},
	} {
		p, err := Start(Config{Argv: []string{c.argv0}, Dir: c.dir, Env: c.env, Rules: ruleSet(t)})
		if err != nil {
			t.Fatalf("%s in %s: %v", c.argv0, c.dir, err)
		}
		<-p.Done()
	}
	if _, err := Start(Config{Argv: []string{"./tool"}, Dir: "/", Rules: ruleSet(t)}); err == nil {
		t.Fatal("./tool found outside its folder")
	}
}
