package rules

import (
	"strings"
	"testing"
)

// Claude Code 2.1.332 in auto mode, its safety check unreachable (a model
// server on 127.0.0.1), asks to approve a tool call in a menu without
// numbers, No first and selected: the screen as a pane showed it. It is a
// permission prompt, answered yes by moving to Yes and pressing Enter (its
// number, as the numbered dialog takes, does nothing there).
func TestClaudeCodeUnnumberedApproval(t *testing.T) {
	m := liveManifest(t, embeddedSet(t), "claude-code")
	rule := "────────────────────────────────────────────────────────────"
	dash := "╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌"
	lines := []string{
		" ▐▛███▛█   Claude Code v2.1.332",
		"",
		"❯ corral:shell",
		"",
		rule,
		" Bash command",
		" Run the command",
		dash,
		" ls -la /tmp",
		dash,
		" Auto mode can't check actions in this session, so this one needs your approval",
		"",
		" Do you want to proceed?",
		" ❯ No",
		"   Yes",
		"",
		" Esc to cancel · Tab to amend",
	}
	v := m.Classify(Screen{Lines: lines})
	if v.State != Blocked || v.Kind != "permission" || v.Message != "Do you want to proceed?" || v.Rule != "permission-unnumbered" {
		t.Fatalf("= %s/%s %q (rule %q), want blocked/permission \"Do you want to proceed?\" (permission-unnumbered)", v.State, v.Kind, v.Message, v.Rule)
	}
	for choice, want := range map[string]string{"yes": "\x1b[B\r", "no": "\x1b"} {
		if k, ok := m.KeysFor(v.Rule, choice); !ok || k != want {
			t.Errorf("answer %s = %q, want %q", choice, k, want)
		}
	}
	// Digits and "always" do nothing in this menu (seen live: corral
	// answer 1 and 2 left it waiting): corral must refuse them, not type
	// the numbered dialog's keys.
	for _, choice := range []string{"always", "1", "2"} {
		if k, ok := m.KeysFor(v.Rule, choice); ok {
			t.Errorf("answer %s = %q, want refused: the menu takes no numbers", choice, k)
		}
	}
	// The numbered dialog is still the numbered rule's, answered by number.
	numbered := append(append([]string{}, lines[:13]...), " ❯ 1. Yes", "   2. No", "", " Esc to cancel · Tab to amend")
	if v := m.Classify(Screen{Lines: numbered}); v.Rule != "permission" {
		t.Errorf("the numbered dialog: rule %q, want permission", v.Rule)
	} else if k, _ := m.KeysFor(v.Rule, "yes"); k != "1" {
		t.Errorf("the numbered dialog's yes = %q, want 1", k)
	}
}

// Screens of Claude Code 2.1.332 started as a user starts it (auto mode,
// its default), in a corral pane against a loopback model server: the
// empty input box under the mode's footer is idle, a turn is working, and
// the notice auto mode opens when its check goes through that server is a
// question answered yes with Enter, no with Esc, and accept-edits (its
// own choice) with shift+Tab; the billing notice takes Enter or Esc alone.
func TestClaudeCodeAutoModeScreens(t *testing.T) {
	m := liveManifest(t, embeddedSet(t), "claude-code")
	tests := []struct {
		screen, rule string
		state        State
		kind, msg    string
		keys         map[string]string
		refused      []string
		choices      []string
	}{
		{"idle_auto", "idle", Idle, "", "", nil, nil, nil},
		{"working_auto", "working", Working, "", "", nil, nil, nil},
		{"billing_notice", "notice-continue", Blocked, "question", "We're changing auto mode to no longer charge for classifier requests in Claude Code.",
			map[string]string{"yes": "\r", "no": "\x1b", "cancel": "\x1b"}, []string{"always", "1", "accept-edits"}, nil},
		// A digit typed into this notice did nothing, live.
		{"check_unavailable", "notice", Blocked, "question", "Auto mode can't check actions in this session",
			map[string]string{"yes": "\r", "no": "\x1b", "cancel": "\x1b", "accept-edits": "\x1b[Z"}, []string{"always", "1", "2"}, []string{"accept-edits"}},
	}
	for _, tt := range tests {
		t.Run(tt.screen, func(t *testing.T) {
			v := m.Classify(Screen{Lines: readLiveScreen(t, "claude-code-auto", tt.screen)})
			if v.Rule != tt.rule || v.State != tt.state || v.Kind != tt.kind || v.Message != tt.msg {
				t.Fatalf("= %s/%s %q (rule %q), want %s/%s %q (rule %q)", v.State, v.Kind, v.Message, v.Rule, tt.state, tt.kind, tt.msg, tt.rule)
			}
			for choice, want := range tt.keys {
				if k, ok := m.KeysFor(v.Rule, choice); !ok || k != want {
					t.Errorf("answer %s = %q, want %q", choice, k, want)
				}
			}
			for _, choice := range tt.refused {
				if k, ok := m.KeysFor(v.Rule, choice); ok {
					t.Errorf("answer %s = %q, want refused: the notice does not take it", choice, k)
				}
			}
			var names []string
			for _, c := range m.ChoicesFor(v.Rule) {
				names = append(names, c.Name)
			}
			if strings.Join(names, " ") != strings.Join(tt.choices, " ") {
				t.Errorf("choices %v, want %v", names, tt.choices)
			}
		})
	}
}

// A notice that stays in auto mode but offers no shift+Tab (a later
// version's, say) is still a notice, without the choice it does not offer.
func TestClaudeCodeNoticeWithoutShiftTab(t *testing.T) {
	m := liveManifest(t, embeddedSet(t), "claude-code")
	lines := readLiveScreen(t, "claude-code-auto", "check_unavailable")
	found := false
	for i, l := range lines {
		if strings.Contains(l, "shift+Tab to leave") {
			lines[i], found = "  Enter to stay in auto mode · Esc to cancel", true
		}
	}
	if !found {
		t.Fatal("the recorded notice has no shift+Tab footer")
	}
	v := m.Classify(Screen{Lines: lines})
	if v.State != Blocked || v.Kind != "question" || v.Rule != "notice-continue" {
		t.Fatalf("= %s/%s (rule %q), want blocked/question (notice-continue)", v.State, v.Kind, v.Rule)
	}
	if k, ok := m.KeysFor(v.Rule, "accept-edits"); ok {
		t.Errorf("accept-edits = %q, want refused: the notice does not offer it", k)
	}
}
