// Package approval decides a permission request by a policy file, and
// says how: which rule took it, or why it is left to the person. A request
// is decided only when it was read whole; nothing is denied on the
// person's behalf from a guess.
package approval

import (
	"fmt"
	"strings"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/headless"
)

// Decide is how a policy decides one permission request.
func Decide(p *headless.Policy, req agents.Permission) api.Approval {
	ap, _ := Explain(p, req)
	return ap
}

// Request is a permission request as a policy reads it.
func Request(req agents.Permission) headless.Request {
	return headless.Request{Tool: req.Tool, Input: req.Input, InputKey: req.InputKey, Fields: req.Fields}
}

// Explain decides one permission request and says how: the verdict holds
// every rule that matched and, for a shell command, the rule that took
// each of its simple commands. A question, or a request not read whole,
// is left to the person without a verdict.
func Explain(p *headless.Policy, req agents.Permission) (api.Approval, headless.Verdict) {
	ap := api.Approval{Policy: p.Source, Tool: req.Tool, Input: ClipInput(req.Input), Decision: "person"}
	what := req.Tool
	if req.Input != "" {
		what += ": " + ClipText(req.Input)
	}
	switch {
	case req.Question:
		ap.Text = "a question for you, " + what + ": left to you"
		return ap, headless.Verdict{Decision: headless.Person}
	case !req.Whole:
		ap.Text = "the request was not read whole (" + what + "): left to you"
		return ap, headless.Verdict{Decision: headless.Person}
	}
	v := p.Explain(Request(req))
	switch v.Decision {
	case headless.Allow:
		ap.Decision, ap.Rule = "allow", v.Rule
		if len(v.Rules) > 1 {
			ap.Text = fmt.Sprintf("allowed by rules %s: %s", joinInts(v.Rules), what)
		} else {
			ap.Text = fmt.Sprintf("allowed by rule %d: %s", v.Rule, what)
		}
	case headless.Deny:
		ap.Decision, ap.Rule = "deny", v.Rule
		if v.Command != "" {
			ap.Text = fmt.Sprintf("denied by rule %d (`%s`): %s", v.Rule, ClipText(v.Command), what)
		} else {
			ap.Text = fmt.Sprintf("denied by rule %d: %s", v.Rule, what)
		}
	default:
		switch {
		case v.NoMatch && len(v.Commands) > 1 && v.Refused != "":
			ap.Text = "no rule matches `" + ClipText(v.Unmatched) + "` in " + what + ", and " + v.Refused + ": left to you"
		case v.NoMatch && len(v.Commands) > 1:
			ap.Text = "no rule matches `" + ClipText(v.Unmatched) + "` in " + what + ": left to you"
		case v.NoMatch || v.Refused == "":
			ap.Text = "no rule matches " + what + ": left to you"
		default:
			ap.Text = what + ": " + v.Refused + ": left to you"
		}
	}
	return ap, v
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

// ClipText puts a request's words on one line of at most 200 characters.
func ClipText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		return string(r[:200]) + "…"
	}
	return s
}

// ClipInput bounds a request's input kept in a decision (2,000 characters).
func ClipInput(s string) string {
	if r := []rune(s); len(r) > 2000 {
		return string(r[:2000]) + "…"
	}
	return s
}

// LeftToPerson is a decision turned over to the person, saying why.
func LeftToPerson(ap api.Approval, why string) api.Approval {
	ap.Decision, ap.Rule = "person", 0
	ap.Text = why + ": left to you"
	return ap
}

// AnswerChoice is the answer a rule's decision types.
func AnswerChoice(ap api.Approval) string {
	if ap.Decision == "deny" {
		return "no"
	}
	return "yes"
}

// ReportedRequest reads an OSC 7501 permission message, "approve TOOL:
// INPUT" (Claude Code's words); whole is false for anything else, or for
// a message that may have been cut (an ellipsis, the protocol's limit).
func ReportedRequest(msg string) (req agents.Permission, whole bool) {
	rest, ok := strings.CutPrefix(msg, "approve ")
	if !ok {
		return req, false
	}
	tool, input, ok := strings.Cut(rest, ": ")
	if !ok || tool == "" || strings.ContainsAny(tool, " \t") || input == "" {
		return agents.Permission{Tool: tool}, false
	}
	req = agents.Permission{Tool: tool, Input: input}
	if strings.HasSuffix(input, "…") || strings.HasSuffix(input, "...") || len(msg) >= MaxReportMsg {
		return req, false
	}
	req.Whole = true
	return req, true
}

// MaxReportMsg is OSC 7501's bound on a decoded msg: one this long may be cut.
const MaxReportMsg = 2048

// SameRequest says whether a block's message may be about the request a
// rule just decided: it names its input (or names nothing).
func SameRequest(msg, input string) bool {
	if msg == "" {
		return true
	}
	in := strings.Join(strings.Fields(input), " ")
	if r := []rune(in); len(r) > 40 {
		in = string(r[:40])
	}
	return strings.Contains(strings.Join(strings.Fields(msg), " "), in)
}

// ShowsWhole says whether a prompt's text shows input as whole lines of
// its own: one line, or consecutive lines a long command wrapped into
// (joined at a space, or mid-word), equal to it with the indentation and
// runs of spaces aside. Part of a line ("$ ls", "ls; rm -rf ~") is not it.
func ShowsWhole(region, input string) bool {
	want := strings.Join(strings.Fields(input), " ")
	if want == "" {
		return false
	}
	var lines []string
	for _, l := range strings.Split(region, "\n") {
		lines = append(lines, strings.TrimSpace(trimFrame(l)))
	}
	for i := range lines {
		if lines[i] == "" {
			continue
		}
		spaced, tight := "", ""
		for j := i; j < len(lines) && lines[j] != "" && len(tight) <= len(input)+len(lines[j]); j++ {
			if j == i {
				spaced, tight = lines[j], lines[j]
			} else {
				spaced, tight = spaced+" "+lines[j], tight+lines[j]
			}
			if strings.Join(strings.Fields(spaced), " ") == want || strings.Join(strings.Fields(tight), " ") == want {
				return true
			}
		}
	}
	return false
}

// trimFrame takes a dialog's box-drawing border off a line ("│ ls -la │").
func trimFrame(l string) string {
	l = strings.TrimSpace(l)
	for _, b := range []string{"│", "┃", "║", "|"} {
		l = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(l, b), b))
	}
	return l
}
