package headless

import "fmt"

// Match is the rule a tool call matches, for callers that must tell a
// match from none: a pane leaves an unmatched request to its person
// instead of denying it. n is the rule's number (from 1); ok is false
// when no rule matches.
func (p *Policy) Match(tool, input string) (n int, allow, ok bool) {
	for _, r := range p.rules {
		if r.tool != nil && !r.tool.MatchString(tool) {
			continue
		}
		if r.input != nil && !r.input.MatchString(input) {
			continue
		}
		return r.n, r.allow, true
	}
	return 0, false, false
}

// Rules describes each rule, in order: `allow tool "Bash" input "^ls "`.
func (p *Policy) Rules() []string {
	out := make([]string, len(p.rules))
	for i, r := range p.rules {
		verb := "deny"
		if r.allow {
			verb = "allow"
		}
		out[i] = fmt.Sprintf("%s tool %q input %q", verb, r.toolSrc, r.inputSrc)
	}
	return out
}

// Matches says, for each rule in order, whether it matches the tool call
// (the first that does decides).
func (p *Policy) Matches(tool, input string) []bool {
	out := make([]bool, len(p.rules))
	for i, r := range p.rules {
		out[i] = (r.tool == nil || r.tool.MatchString(tool)) && (r.input == nil || r.input.MatchString(input))
	}
	return out
}
