package headless

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/corral-dev/corral/internal/safefile"
	"github.com/corral-dev/corral/internal/tomlfile"
)

// Policy decides permission requests without a person: ordered rules over
// the tool's name and its input, the first rule that matches a request (or,
// for a shell command, each of its simple commands) takes it. corral exec
// denies what no rule allows; a pane leaves it to the person.
type Policy struct {
	Source string
	rules  []policyRule
}

type policyRule struct {
	n     int
	tool  *regexp.Regexp
	input *regexp.Regexp
	// fields are the tool input's fields the rule checks, by name.
	fields map[string]*regexp.Regexp
	allow  bool
	// otherAny: fields the rule does not check may hold anything.
	otherAny bool
	// operators join a shell command's simple commands; runners lets the
	// rule allow a command that runs another (sudo, sh -c, xargs, …).
	operators []string
	runners   bool
	toolSrc   string
	inputSrc  string
	fieldSrc  map[string]string
}

// toolOnly says the rule checks nothing of the input: it takes a request
// whole, whatever its input, as corral always has.
func (r *policyRule) toolOnly() bool { return r.input == nil && len(r.fields) == 0 }

type policyFile struct {
	Rules []struct {
		Tool        string            `toml:"tool"`
		Input       string            `toml:"input"`
		Fields      map[string]string `toml:"fields"`
		OtherFields string            `toml:"other_fields"`
		Operators   []string          `toml:"operators"`
		Runners     string            `toml:"runners"`
		Decision    string            `toml:"decision"`
	} `toml:"rule"`
}

// ruleKeys are a rule's own keys.
var ruleKeys = []string{"tool", "input", "fields", "other_fields", "operators", "runners", "decision"}

// MaxPolicyBytes bounds a policy file.
const MaxPolicyBytes = 1 << 20

// ShellOperators are what a rule's operators may list: the ways of joining
// simple commands a rule may agree to. Everything else (redirections,
// substitutions, subshells, "&", …) is never allowed by a rule that checks
// the input.
var ShellOperators = []string{";", "&&", "||", "|"}

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
	if err := tomlfile.Decode("policy", source, data, &f,
		"rules have tool, input, fields, other_fields, operators, runners and decision"); err != nil {
		return nil, err
	}
	p := &Policy{Source: source}
	for i, r := range f.Rules {
		n := i + 1
		bad := func(format string, a ...any) error {
			return fmt.Errorf("policy %s: rule %d: %s", source, n, fmt.Sprintf(format, a...))
		}
		pr := policyRule{n: n, toolSrc: r.Tool, inputSrc: r.Input}
		for _, key := range ruleKeys {
			// TOML puts every key after [rule.fields] in that table.
			if _, ok := r.Fields[key]; ok {
				return nil, bad("fields.%s: %s is a key of the rule, not a field: put it above [rule.fields]", key, key)
			}
		}
		switch r.Decision {
		case "allow":
			pr.allow = true
		case "deny":
		default:
			return nil, bad("decision %q must be allow or deny", r.Decision)
		}
		var err error
		if r.Tool != "" {
			if pr.tool, err = regexp.Compile("^(?:" + r.Tool + ")$"); err != nil {
				return nil, bad("tool: bad regex %q: %v: fix it", r.Tool, err)
			}
		}
		if r.Input != "" {
			if pr.input, err = regexp.Compile(r.Input); err != nil {
				return nil, bad("input: bad regex %q: %v: fix it", r.Input, err)
			}
		}
		if len(r.Fields) > 0 {
			pr.fields, pr.fieldSrc = map[string]*regexp.Regexp{}, map[string]string{}
		}
		for name, src := range r.Fields {
			if name == "" {
				return nil, bad("fields: a field with no name: name the tool input's field")
			}
			re, err := regexp.Compile(src)
			if err != nil {
				return nil, bad("fields.%s: bad regex %q: %v: fix it", name, src, err)
			}
			pr.fields[name], pr.fieldSrc[name] = re, src
		}
		widens := pr.allow && !pr.toolOnly()
		switch r.OtherFields {
		case "":
		case "any":
			pr.otherAny = true
		default:
			return nil, bad(`other_fields %q must be "any" (or left out: a field the rule does not check leaves the request to you)`, r.OtherFields)
		}
		switch r.Runners {
		case "":
		case "allow":
			pr.runners = true
		default:
			return nil, bad(`runners %q must be "allow" (or left out: a command that runs another is left to you)`, r.Runners)
		}
		for _, op := range r.Operators {
			if !slices.Contains(ShellOperators, op) {
				return nil, bad("operators: %q is not one of %s: only these join commands a rule may allow", op, quoteAll(ShellOperators))
			}
			if !slices.Contains(pr.operators, op) {
				pr.operators = append(pr.operators, op)
			}
		}
		if !widens && (r.OtherFields != "" || r.Runners != "" || len(r.Operators) > 0) {
			if !pr.allow {
				return nil, bad("other_fields, operators and runners widen an allow rule; a deny rule takes any request it matches: remove them")
			}
			return nil, bad("other_fields, operators and runners widen a rule that checks input or fields; a rule without either takes any input already: remove them")
		}
		p.rules = append(p.rules, pr)
	}
	return p, nil
}

// Decide returns corral exec's decision for a tool call and the rule that
// made it: what no rule allows is denied. The input is the tool's main
// input (see Request); a request's other fields are not known here, so a
// rule that checks fields matches none (DecideRequest knows them).
func (p *Policy) Decide(tool, input string) (allow bool, why string) {
	return p.DecideRequest(Request{Tool: tool, Input: input})
}

// cutInput says whether an input is one the stream parser clipped: a
// command cut there may have lost what follows ("; rm -rf ~").
func cutInput(s string) bool {
	return len(s) == clipLine+len("…") && strings.HasSuffix(s, "…")
}

// Rules describes each rule, in order: `allow tool "Bash" input "^ls "`,
// with its fields, other_fields, operators and runners when set.
func (p *Policy) Rules() []string {
	out := make([]string, len(p.rules))
	for i, r := range p.rules {
		verb := "deny"
		if r.allow {
			verb = "allow"
		}
		s := fmt.Sprintf("%s tool %q input %q", verb, r.toolSrc, r.inputSrc)
		if len(r.fieldSrc) > 0 {
			var fs []string
			for _, name := range sortedKeys(r.fieldSrc) {
				fs = append(fs, fmt.Sprintf("%s %q", name, r.fieldSrc[name]))
			}
			s += " fields {" + strings.Join(fs, ", ") + "}"
		}
		if r.otherAny {
			s += ` other_fields "any"`
		}
		if len(r.operators) > 0 {
			s += " operators " + quoteAll(r.operators)
		}
		if r.runners {
			s += ` runners "allow"`
		}
		out[i] = s
	}
	return out
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
