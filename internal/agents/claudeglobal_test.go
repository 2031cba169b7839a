package agents

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corral's global hooks are added beside the user's own, once, and taken
// away leaving the user's settings as they were.
func TestMergeClaudeHooks(t *testing.T) {
	user := `{"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}`
	hook := []string{"/usr/bin/corral", "hook"}
	out, changed, err := MergeClaudeHooks([]byte(user), hook, false)
	if err != nil || !changed {
		t.Fatalf("add: changed %v, %v", changed, err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got["model"] != "opus" {
		t.Fatalf("the user's setting was lost: %s", out)
	}
	stop := got["hooks"].(map[string]any)["Stop"].([]any)
	if len(stop) != 2 || !strings.Contains(string(out), "notify-send done") {
		t.Fatalf("Stop hooks %v: want the user's and corral's", stop)
	}
	for _, ev := range claudeEvents {
		if !strings.Contains(string(out), `"`+ev+`"`) {
			t.Errorf("no %s hook", ev)
		}
	}
	again, changed, err := MergeClaudeHooks(out, hook, false)
	if err != nil || changed || string(again) != string(out) {
		t.Fatalf("adding twice changed the settings: %v %v", changed, err)
	}
	back, changed, err := MergeClaudeHooks(out, hook, true)
	if err != nil || !changed {
		t.Fatalf("remove: %v %v", changed, err)
	}
	var want, have any
	_ = json.Unmarshal([]byte(user), &want)
	_ = json.Unmarshal(back, &have)
	wb, _ := json.Marshal(want)
	hb, _ := json.Marshal(have)
	if string(wb) != string(hb) {
		t.Fatalf("after remove:\n%s\nwant\n%s", hb, wb)
	}
	for _, bad := range []string{"[1]", `{"hooks": 3}`, "{"} {
		if _, _, err := MergeClaudeHooks([]byte(bad), hook, false); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestInstallClaudeGlobal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "claude", "settings.json")
	if changed, err := InstallClaudeGlobal(path, []string{"corral", "hook"}, true); err != nil || changed {
		t.Fatalf("remove of nothing: %v %v", changed, err)
	}
	if changed, err := InstallClaudeGlobal(path, []string{"corral", "hook"}, false); err != nil || !changed {
		t.Fatalf("install: %v %v", changed, err)
	}
	if !ClaudeGlobalInstalled(path) {
		t.Fatal("not seen as installed")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if changed, err := InstallClaudeGlobal(path, []string{"corral", "hook"}, true); err != nil || !changed {
		t.Fatalf("remove: %v %v", changed, err)
	}
	if ClaudeGlobalInstalled(path) {
		t.Fatal("still installed")
	}
}
