package paneset

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/api"
)

// A tmux server is named by -L NAME or -S PATH, not both, and a path is
// absolute; a refused request watches nothing.
func TestWatchTmuxRefuses(t *testing.T) {
	s := newTestSet(t, t.TempDir(), nil)
	for _, tc := range []struct {
		req  api.TmuxRequest
		want string
	}{
		{api.TmuxRequest{Name: "a", Socket: "/tmp/b"}, "not both"},
		{api.TmuxRequest{Name: "a/b"}, "holds no '/'"},
		{api.TmuxRequest{Socket: "rel/sock"}, "not an absolute path"},
	} {
		if _, err := s.WatchTmux(tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WatchTmux %+v: %v, want %q", tc.req, err, tc.want)
		}
	}
	if got := s.TmuxServers(); len(got) != 0 {
		t.Errorf("watched after refusals: %+v", got)
	}
}

// A watched server is remembered in the state folder and watched again by
// the next set, even while it is not running; unwatched, it is forgotten.
func TestWatchedTmuxServersAreRemembered(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("no tmux")
	}
	dir := t.TempDir()
	sock := dir + "/tmux-none"
	a := newTestSet(t, dir, nil)
	if _, err := a.WatchTmux(api.TmuxRequest{Socket: sock}); err != nil {
		t.Fatal(err)
	}
	a.StopTmux()

	b := newTestSet(t, dir, nil)
	b.WatchSavedTmux()
	t.Cleanup(b.StopTmux)
	got := b.TmuxServers()
	if len(got) != 1 || got[0].Socket != sock || got[0].Running {
		t.Fatalf("watched again: %+v, want %s, not running", got, sock)
	}
	if err := b.UnwatchTmux(api.TmuxRequest{Socket: sock}); err != nil {
		t.Fatal(err)
	}
	if err := b.UnwatchTmux(api.TmuxRequest{Socket: sock}); err == nil {
		t.Error("a server unwatched twice")
	}

	c := newTestSet(t, dir, nil)
	c.WatchSavedTmux()
	t.Cleanup(c.StopTmux)
	if got := c.TmuxServers(); len(got) != 0 {
		t.Errorf("an unwatched server was watched again: %+v", got)
	}
}
