package rules

import "testing"

// The generic manifest's prompts say what they ask.
func TestGenericPromptMessages(t *testing.T) {
	m, ok := embeddedSet(t).ByName("generic")
	if !ok {
		t.Fatal("no generic manifest")
	}
	tests := []struct {
		line  string
		state State
		msg   string
	}{
		{"Password:", Blocked, "Password"},
		{"[sudo] password for dev: ", Blocked, "[sudo] password for dev"},
		{"Enter passphrase for key '/home/dev/.ssh/id_ed25519':", Blocked, "Enter passphrase for key '/home/dev/.ssh/id_ed25519'"},
		{"Do you want to continue? [Y/n]", Blocked, "Do you want to continue? [Y/n]"},
		{"the password was changed", Idle, ""},
	}
	for _, tt := range tests {
		v := m.Classify(Screen{Lines: []string{"$ make", tt.line}})
		if v.State != tt.state || v.Message != tt.msg {
			t.Errorf("%q: %s %q, want %s %q", tt.line, v.State, v.Message, tt.state, tt.msg)
		}
	}
}
