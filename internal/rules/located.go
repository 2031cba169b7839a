package rules

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/corral-dev/corral/internal/tomlfile"
)

// decodeError turns TOML problems into located Errors. An unknown key in
// a rule names the rule, and the choices it is in (the decoder's path
// leaves out an array of inline tables: "rule.lable").
func decodeError(source string, data []byte, ps []tomlfile.Problem) error {
	var errs []error
	loc := newLocator(data)
	for _, p := range ps {
		msg := p.Msg
		if len(p.Key) > 1 && p.Key[0] == "rule" {
			if id, field, ok := loc.ruleAt(p.Line); ok {
				if field == "choices" && (len(p.Key) < 2 || p.Key[1] != "choices") {
					msg = fmt.Sprintf("unknown key %q", "rule.choices."+strings.Join(p.Key[1:], "."))
				}
				msg += " in rule " + id
			}
		}
		if p.Key != nil {
			msg += " (check its spelling against the manifest reference)"
		}
		errs = append(errs, &Error{File: source, Line: p.Line, Column: p.Column, Msg: msg, Snippet: p.Snippet})
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// locator finds the line and column of a key in the source, either at the
// top level (rule -1, searched before the first [[rule]]) or inside the
// i-th [[rule]] table.
type locator struct {
	lines []string
	rules []int // line index of each [[rule]] header
}

func newLocator(data []byte) *locator {
	l := &locator{lines: strings.Split(string(data), "\n")}
	for i, line := range l.lines {
		if strings.TrimSpace(line) == "[[rule]]" {
			l.rules = append(l.rules, i)
		}
	}
	return l
}

// ruleAt names the rule whose table holds a line (1-based): its id (or
// #N when it has none) and the key that line's entry is under.
func (l *locator) ruleAt(line int) (id, field string, ok bool) {
	i := line - 1
	rule := -1
	for n, start := range l.rules {
		if start < i {
			rule = n
		}
	}
	if rule < 0 || i >= len(l.lines) {
		return "", "", false
	}
	id = fmt.Sprintf("#%d", rule+1)
	if n, _ := l.find(rule, "id"); n > 0 {
		if _, v, found := strings.Cut(l.lines[n-1], "="); found {
			if m := quoted().FindStringSubmatch(v); m != nil && m[1]+m[2] != "" {
				id = m[1] + m[2]
			}
		}
	}
	// The entry is the nearest line above that starts a key.
	for j := i; j > l.rules[rule]; j-- {
		t := strings.TrimLeft(l.lines[j], " \t")
		if k, _, found := strings.Cut(t, "="); found && keyWord().MatchString(strings.TrimSpace(k)) {
			return id, strings.TrimSpace(k), true
		}
	}
	return id, "", true
}

var quoted = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*(?:"([^"]*)"|'([^']*)')`) })

var keyWord = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })

func (l *locator) find(rule int, key string) (line, col int) {
	from, to := 0, len(l.lines)
	if rule >= 0 && rule < len(l.rules) {
		from = l.rules[rule]
		if rule+1 < len(l.rules) {
			to = l.rules[rule+1]
		}
	}
	for i := from; i < to; i++ {
		trimmed := strings.TrimLeft(l.lines[i], " \t")
		if rest, ok := strings.CutPrefix(trimmed, key); ok && strings.HasPrefix(strings.TrimLeft(rest, " \t"), "=") {
			return i + 1, len(l.lines[i]) - len(trimmed) + 1
		}
	}
	if rule >= 0 && rule < len(l.rules) {
		return l.rules[rule] + 1, 1
	}
	return 0, 0
}
