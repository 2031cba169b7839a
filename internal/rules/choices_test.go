package rules

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// choiceManifest is a manifest whose "ask" rule declares its choices as
// given (a TOML array of inline tables); "other" declares none.
func choiceManifest(choices string) string {
	return "name = \"x\"\n[answers]\nyes = \"y\"\nno = \"n\"\noption = \"{n}\"\n" +
		"[[rule]]\nid = \"ask\"\nstate = \"blocked\"\npattern = 'Enter to stay'\n" +
		"choices = " + choices + "\n" +
		"[[rule]]\nid = \"other\"\nstate = \"blocked\"\npattern = 'Enter to continue'\n"
}

// A rule's own choices are answers of its prompt alone: named, typed as
// declared, and unknown to the manifest and to every other rule.
func TestRuleChoices(t *testing.T) {
	m, err := Parse("x.toml", []byte(choiceManifest(
		`[{ name = "accept-edits", keys = "\u001b[Z", label = "leave for accept edits mode" }, { name = "later", keys = "l", label = "ask again later" }]`)))
	if err != nil {
		t.Fatal(err)
	}
	want := []Choice{{Name: "accept-edits", Keys: "\x1b[Z", Label: "leave for accept edits mode"}, {Name: "later", Keys: "l", Label: "ask again later"}}
	if got := m.ChoicesFor("ask"); !reflect.DeepEqual(got, want) {
		t.Fatalf("ChoicesFor(ask) = %+v, want %+v", got, want)
	}
	tests := []struct {
		rule, choice, keys string
		ok                 bool
	}{
		{"ask", "accept-edits", "\x1b[Z", true},
		{"ask", "later", "l", true},
		{"ask", "yes", "y", true}, // the built-in answers stay
		{"ask", "2", "2", true},
		{"other", "accept-edits", "", false},
		{"", "accept-edits", "", false},
		{"ask", "accept", "", false},
	}
	for _, tt := range tests {
		keys, ok := m.KeysFor(tt.rule, tt.choice)
		if ok != tt.ok || keys != tt.keys {
			t.Errorf("KeysFor(%q, %q) = %q, %v; want %q, %v", tt.rule, tt.choice, keys, ok, tt.keys, tt.ok)
		}
	}
	if got := m.ChoicesFor("other"); got != nil {
		t.Errorf("ChoicesFor(other) = %+v, want none", got)
	}
	if got := m.ChoicesFor(""); got != nil {
		t.Errorf("ChoicesFor(\"\") = %+v, want none", got)
	}
}

// Each broken choice is refused with the file, its line and column, the
// rule and the field at fault.
func TestRuleChoiceErrors(t *testing.T) {
	tests := []struct {
		name    string
		choices string
		message string
	}{
		{"missing name", `[{ keys = "k", label = "l" }]`, "rule ask: choices[1]: name is required"},
		{"upper case name", `[{ name = "Accept", keys = "k", label = "l" }]`, `rule ask: choices[1] "Accept": name must be 1-32 of [a-z0-9-]`},
		{"underscore", `[{ name = "accept_edits", keys = "k", label = "l" }]`, `choices[1] "accept_edits": name must be`},
		{"a number is an option", `[{ name = "3", keys = "k", label = "l" }]`, `choices[1] "3": name must be 1-32 of [a-z0-9-], starting with a letter`},
		{"leading dash", `[{ name = "-x", keys = "k", label = "l" }]`, `choices[1] "-x": name must be`},
		{"too long a name", `[{ name = "` + strings.Repeat("a", MaxChoiceName+1) + `", keys = "k", label = "l" }]`, "name must be 1-32"},
		{"built-in yes", `[{ name = "yes", keys = "k", label = "l" }]`, `choices[1] "yes": name is a built-in answer`},
		{"built-in cancel", `[{ name = "cancel", keys = "k", label = "l" }]`, `choices[1] "cancel": name is a built-in answer`},
		{"built-in option", `[{ name = "option", keys = "k", label = "l" }]`, `choices[1] "option": name is a built-in answer`},
		{"twice", `[{ name = "a", keys = "k", label = "l" }, { name = "a", keys = "j", label = "m" }]`, `choices[2] "a": name declared twice`},
		{"no keys", `[{ name = "a", label = "l" }]`, `rule ask: choices[1] "a": keys must be 1-64 bytes`},
		{"too many keys", `[{ name = "a", keys = "` + strings.Repeat("k", MaxKeystrokes+1) + `", label = "l" }]`, `choices[1] "a": keys must be 1-64 bytes`},
		{"no label", `[{ name = "a", keys = "k" }]`, `rule ask: choices[1] "a": label is required`},
		{"blank label", `[{ name = "a", keys = "k", label = "  " }]`, `choices[1] "a": label is required`},
		{"long label", `[{ name = "a", keys = "k", label = "` + strings.Repeat("é", MaxChoiceLabel+1) + `" }]`, `choices[1] "a": label is 61 characters; the limit is 60`},
		{"label of two lines", `[{ name = "a", keys = "k", label = "one\ntwo" }]`, `choices[1] "a": label must be one line`},
		{"too many", "[" + strings.Repeat(`{ name = "a", keys = "k", label = "l" }, `, MaxChoices+1) + "]", "rule ask: 9 choices; the limit is 8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The choices line of rule ask is line 10.
			err := refused(t, choiceManifest(tt.choices), "10:1: ", tt.message)
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("error %T is not a *rules.Error", err)
			}
		})
	}
}

// What is not a choice is refused too: an unknown field (named with the
// rule it is in), a choice on a rule that reads no prompt, a choice that
// is not a table.
func TestRuleChoiceShape(t *testing.T) {
	tests := []struct {
		name, src, loc, message string
	}{
		{"unknown field", choiceManifest(`[{ name = "a", keys = "k", lable = "l" }]`), "10:", `unknown key "rule.choices.lable" in rule ask`},
		{"unknown field, several lines", "name = \"x\"\n[[rule]]\nid = 'ask'  # the notice\nstate = \"blocked\"\npattern = 'x'\nchoices = [\n  { name = \"a\", keys = \"k\", label = \"l\" },\n  { name = \"b\", keys = \"k\", label = \"l\", stops = true },\n]\n",
			"8:", `unknown key "rule.choices.stops" in rule ask`},
		{"unknown rule key", "name = \"x\"\n[[rule]]\nid = \"a\"\nstate = \"idle\"\nchoice = []\npattern = 'x'\n", "5:1", `unknown key "rule.choice" in rule a`},
		{"on an idle rule", "name = \"x\"\n[[rule]]\nid = \"a\"\nstate = \"idle\"\npattern = 'x'\nchoices = [{ name = \"b\", keys = \"k\", label = \"l\" }]\n", "6:1", "rule a: choices are only for blocked rules"},
		{"not a table", "name = \"x\"\n[[rule]]\nid = \"a\"\nstate = \"blocked\"\npattern = 'x'\nchoices = [\"accept-edits\"]\n", "6:", "cannot decode"},
		{"at the top level", "name = \"x\"\nchoices = []\n", "2:1", `unknown key "choices"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refused(t, tt.src, tt.loc, tt.message)
		})
	}
}
