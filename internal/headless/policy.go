package headless

import (
	"fmt"
	"regexp"

	"github.com/corral-dev/corral/internal/safefile"
	"github.com/corral-dev/corral/internal/tomlfile"
)

// Policy decides permission requests without a person: ordered rules over
// the tool's name and its input, first match wins, and a request no rule
// matches is denied.
type Policy struct {
	Source string
	rules  []policyRule
}

type policyRule struct {
	n        int
	tool     *regexp.Regexp
	input    *regexp.Regexp
	allow    bool
	toolSrc  string
	inputSrc string
}

type policyFile struct {
	Rules []struct {
		Tool     string `toml:"tool"`
		Input    string `toml:"input"`
		Decision string `toml:"decision"`
	} `toml:"rule"`
}

// MaxPolicyBytes bounds a policy file.
const MaxPolicyBytes = 1 << 20

// LoadPolicy reads a policy file: a regular file of at most MaxPolicyBytes.
func LoadPolicy(path string) (*Policy, error) {
	data, err := safefile.Read(path, MaxPolicyBytes)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	return ParsePolicy(path, data)
}

// ParsePolicy compiles a policy; errors name the file, line and column or
// the rule.
func ParsePolicy(source string, data []byte) (*Policy, error) {
	var f policyFile
	if err := tomlfile.Decode("policy", source, data, &f, "rules have tool, input and decision"); err != nil {
		return nil, err
	}
	p := &Policy{Source: source}
	for i, r := range f.Rules {
		pr := policyRule{n: i + 1, toolSrc: r.Tool, inputSrc: r.Input}
		switch r.Decision {
		case "allow":
			pr.allow = true
		case "deny":
		default:
			return nil, fmt.Errorf("policy %s: rule %d: decision %q must be allow or deny", source, i+1, r.Decision)
		}
		var err error
		if r.Tool != "" {
			if pr.tool, err = regexp.Compile("^(?:" + r.Tool + ")$"); err != nil {
				return nil, fmt.Errorf("policy %s: rule %d: tool: %v", source, i+1, err)
			}
		}
		if r.Input != "" {
			if pr.input, err = regexp.Compile(r.Input); err != nil {
				return nil, fmt.Errorf("policy %s: rule %d: input: %v", source, i+1, err)
			}
		}
		p.rules = append(p.rules, pr)
	}
	return p, nil
}

// Decide returns the decision for a tool call and the rule that made it.
func (p *Policy) Decide(tool, input string) (allow bool, why string) {
	for _, r := range p.rules {
		if r.tool != nil && !r.tool.MatchString(tool) {
			continue
		}
		if r.input != nil && !r.input.MatchString(input) {
			continue
		}
		verb := "deny"
		if r.allow {
			verb = "allow"
		}
		return r.allow, fmt.Sprintf("%s rule %d (tool %q, input %q): %s", p.Source, r.n, r.toolSrc, r.inputSrc, verb)
	}
	return false, p.Source + ": no rule matched: deny"
}
