package headless

import (
	"fmt"
	"slices"
	"strings"
)

// Request is a permission request as a policy sees it.
type Request struct {
	Tool string
	// Input is the tool's main input: the field InputKey names (a
	// command, a file path, a URL or a pattern), or the whole input as
	// compact JSON when InputKey is "".
	Input    string
	InputKey string
	// Fields are every top-level field of the tool's input: a string as
	// it is, anything else as compact JSON. Nil when only Input is known
	// (an OSC 7501 report, corral exec): Input is then the one field.
	Fields map[string]string
}

// The decisions of a Verdict. Person: no rule decides; a pane leaves the
// request to its person, corral exec (with nobody to ask) denies it.
const (
	Allow  = "allow"
	Deny   = "deny"
	Person = "person"
)

// Verdict is how a policy decides one request, and why.
type Verdict struct {
	Decision string
	// Rule is the deciding rule, from 1 (for an allowed shell command of
	// several, the first command's); 0 when no rule decides.
	Rule int
	// Command is the simple command the deciding rule took, for a shell
	// command of several ("rm -rf ~" of "ls; rm -rf ~"); else "".
	Command string
	// Refused says why no rule decides when one came near: what the rule
	// that took (part of) the request may not allow. "" otherwise.
	// RefusedBy is that rule, and Why the reason alone.
	Refused   string
	RefusedBy int
	Why       string
	// NoMatch says a part of the request matches no rule; Unmatched is
	// the first such part.
	NoMatch   bool
	Unmatched string
	// Shell says Commands were read from a shell command: Commands then
	// holds each simple command with the rule that takes it.
	Shell    bool
	Commands []CommandVerdict
	// Matched says, for each rule in order, whether it matches the
	// request or one of its commands.
	Matched []bool
	// Rules are the rules that allowed, in the order of the commands.
	Rules []int
}

// CommandVerdict is one simple command of a shell request and the rule
// that takes it (0: none).
type CommandVerdict struct {
	Command  string `json:"command"`
	Rule     int    `json:"rule"`
	Decision string `json:"decision"`
	Why      string `json:"why,omitempty"`
}

// Explain decides a request: each part of it (the request itself, or
// each simple command of a shell tool's command) is taken by the first
// rule whose tool, input and fields match it. A part a deny rule takes
// denies the whole request; the request is allowed only when an allow
// rule takes every part and agrees to all of it (its fields, the shell
// constructs used); anything else is for the person.
func (p *Policy) Explain(req Request) Verdict {
	v := Verdict{Decision: Person, Matched: make([]bool, len(p.rules))}
	var parts []shellCommand
	var whole shellShape
	if isShellTool(req.Tool) {
		v.Shell = true
		whole = readShell(req.Input)
		parts = whole.commands
	} else {
		parts = []shellCommand{{text: req.Input}}
	}
	denied, unmatched, refused := -1, -1, -1
	for i, c := range parts {
		cv := CommandVerdict{Command: c.text, Decision: Person}
		for ri := range p.rules {
			r := &p.rules[ri]
			if !r.matches(req, c.text) {
				continue
			}
			v.Matched[ri] = true
			if cv.Rule != 0 {
				continue // an earlier rule took it: go on only to mark the matches
			}
			cv.Rule = r.n
			switch {
			case !r.allow:
				cv.Decision = Deny
			default:
				if why := r.refuses(req, c, &whole, v.Shell); why != "" {
					cv.Why = why
				} else {
					cv.Decision = Allow
				}
			}
		}
		if cv.Rule == 0 {
			cv.Why = "no rule matches it"
		}
		switch {
		case cv.Decision == Deny && denied < 0:
			denied = i
		case cv.Rule == 0 && unmatched < 0:
			unmatched = i
		case cv.Rule != 0 && cv.Decision == Person && refused < 0:
			refused = i
		}
		v.Commands = append(v.Commands, cv)
	}
	switch {
	case denied >= 0:
		v.Decision, v.Rule = Deny, v.Commands[denied].Rule
		if len(parts) > 1 {
			v.Command = v.Commands[denied].Command
		}
	case refused >= 0 || unmatched >= 0:
		if refused >= 0 {
			c := v.Commands[refused]
			v.RefusedBy, v.Why = c.Rule, c.Why
			if len(parts) > 1 {
				v.Refused = fmt.Sprintf("rule %d takes `%s` but %s", c.Rule, clipSource(c.Command), c.Why)
			} else {
				v.Refused = fmt.Sprintf("rule %d matches but %s", c.Rule, c.Why)
			}
		}
		if unmatched >= 0 {
			v.NoMatch, v.Unmatched = true, v.Commands[unmatched].Command
		}
	default:
		v.Decision, v.Rule = Allow, v.Commands[0].Rule
		for _, c := range v.Commands {
			if !slices.Contains(v.Rules, c.Rule) {
				v.Rules = append(v.Rules, c.Rule)
			}
		}
	}
	if !v.Shell {
		v.Commands = nil
	}
	return v
}

// matches says whether a rule's tool, input and fields match a request
// (or one of its simple commands, text). A rule's fields check the named
// fields of the tool's input; for a shell tool, a field that is the
// command itself is matched against each simple command, as input is.
func (r *policyRule) matches(req Request, text string) bool {
	if r.tool != nil && !r.tool.MatchString(req.Tool) {
		return false
	}
	if r.input != nil && !r.input.MatchString(text) {
		return false
	}
	if len(r.fields) == 0 {
		return true
	}
	if req.Fields == nil {
		return false // only the main input is known: fields cannot be checked
	}
	for name, re := range r.fields {
		val, ok := req.Fields[name]
		if name == req.InputKey && req.InputKey != "" {
			val = text
		}
		if !ok || !re.MatchString(val) {
			return false
		}
	}
	return true
}

// refuses says why an allow rule that matches a part of a request may
// not allow it, or "" when it may.
func (r *policyRule) refuses(req Request, c shellCommand, whole *shellShape, shell bool) string {
	if shell && whole.err != "" {
		return "it cannot be read as a shell command (" + whole.err + ")"
	}
	if r.toolOnly() {
		return "" // takes the whole request, whatever its input
	}
	if un := r.unchecked(req); len(un) > 0 && !r.otherAny {
		return fmt.Sprintf("it does not check the field%s %s (check %s under [rule.fields], or set other_fields = \"any\")",
			plural(len(un)), strings.Join(un, ", "), pronoun(len(un)))
	}
	if !shell {
		return ""
	}
	if len(whole.refused) > 0 {
		return strings.Join(whole.refused, "; ") + ": only a rule that checks neither input nor fields allows that"
	}
	if c.problem != "" {
		return c.problem
	}
	if c.runner != "" && !r.runners {
		return c.runner + ` runs another command (set runners = "allow" on the rule to allow that)`
	}
	var missing []string
	for _, op := range whole.operators {
		if !slices.Contains(r.operators, op) {
			missing = append(missing, op)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("%s joins it to another command (add %s to the rule's operators)", strings.Join(missing, " and "), quoteAll(missing))
	}
	return ""
}

// unchecked are the request's fields a rule neither checks nor may
// ignore, in order. A rule's input checks the main input: the field it
// was read from, or every field when the input is the whole JSON.
func (r *policyRule) unchecked(req Request) []string {
	var out []string
	for _, name := range sortedKeys(req.Fields) {
		switch {
		case r.fields[name] != nil:
		case r.input != nil && (req.InputKey == "" || name == req.InputKey):
		case isMetadata(req.Tool, name):
		default:
			out = append(out, name)
		}
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// shellTools are the tools whose main input is a shell command: Claude
// Code's Bash, Gemini CLI's and Qwen Code's run_shell_command, Codex's
// shell tools, and an ACP agent's execute kind.
var shellTools = []string{"Bash", "run_shell_command", "shell", "shell_command", "exec_command", "local_shell", "execute"}

// isShellTool says whether a tool's main input is read as a shell command.
func isShellTool(tool string) bool { return slices.Contains(shellTools, tool) }

// metadata are the fields of a tool's input that cannot change what runs
// or what is touched, so a rule need not check them: a shell command's
// description, timeout and running in the background; which lines Read
// shows of a file. Anything else (a working folder, a sandbox switch, a
// file's content) is checked by a rule or leaves the request to you.
var metadata = map[string][]string{
	"Read":      {"offset", "limit", "pages"},
	"read_file": {"offset", "limit"},
}

var shellMetadata = []string{"description", "timeout", "run_in_background", "is_background"}

// isMetadata says whether a field of a tool's input is metadata a rule need
// not check.
func isMetadata(tool, field string) bool {
	if isShellTool(tool) {
		return slices.Contains(shellMetadata, field)
	}
	return slices.Contains(metadata[tool], field)
}
