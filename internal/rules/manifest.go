// Package rules loads agent manifests and classifies screens with them.
//
// A manifest says how to recognise one agent (process names, argv and
// title/screen patterns), its ordered rules (first match wins; blocked
// rules first), each with a state, a kind, the region of the screen it
// reads and an RE2 pattern, and the keystrokes that answer its prompts.
// Manifests hold only patterns and keystrokes: nothing in them can make
// corral run a program. They are strict (unknown keys are errors with line
// and column), bounded, and compiled once at load.
package rules

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/corral-dev/corral/internal/tomlfile"
)

// State is what a rule concludes.
type State string

const (
	Blocked State = "blocked"
	Working State = "working"
	Idle    State = "idle"
)

// Kinds a blocked rule may name.
var kinds = map[string]bool{"permission": true, "question": true, "auth": true}

// Answer names a manifest may define.
const (
	AnswerYes    = "yes"
	AnswerAlways = "always"
	AnswerNo     = "no"
	AnswerCancel = "cancel"
	// AnswerOption is a template: "{n}" is replaced by the option number.
	AnswerOption = "option"
)

// builtinAnswers are the names a rule's own choices may not take.
var builtinAnswers = map[string]bool{AnswerYes: true, AnswerAlways: true, AnswerNo: true, AnswerCancel: true, AnswerOption: true}

// Limits on a manifest.
const (
	MaxManifestBytes = 256 << 10
	MaxRules         = 64
	MaxPatternBytes  = 4096
	MaxKeystrokes    = 64
	MaxBottomRows    = 200
	MaxDetect        = 16
	DefaultConfirm   = 300 * time.Millisecond
	MaxConfirm       = 10 * time.Second
	DefaultSettle    = 150 * time.Millisecond
	MaxSettle        = 5 * time.Second
	DefaultStart     = 60 * time.Second
	MaxStart         = 10 * time.Minute
	DefaultTurnStart = 3 * time.Second
	MaxTurnStart     = 30 * time.Second
	// A rule's own choices: how many, and how long a name and a label.
	MaxChoices     = 8
	MaxChoiceName  = 32
	MaxChoiceLabel = 60
)

var idPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`) })

// choiceName is a choice's name: a word a person types after corral
// answer, never a number (an option's) nor a flag.
var choiceName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9-]*$`) })

// Manifest is a compiled manifest. It is immutable once loaded.
type Manifest struct {
	Name        string
	Display     string
	Description string
	// Evidence says what the rules were written from (agent versions).
	Evidence string
	// Source is where the manifest came from: "embedded:NAME.toml" or a path.
	Source string

	Processes []string
	argv      []*regexp.Regexp
	title     *regexp.Regexp
	screen    *regexp.Regexp

	// IdleConfirm is how long a screen must keep saying "idle" before a
	// working pane is called idle (a spinner frame can blank for a moment).
	IdleConfirm time.Duration
	// AnswerSettle is how long a prompt must have been on screen before
	// keys answer it: a dialog just drawn may not be reading keys yet.
	AnswerSettle time.Duration
	// ReadySettle is how long a freshly started agent's ready screen must
	// stay before the pane reads idle (its input box may be drawn before
	// it takes keys); StartTimeout how long it may take to draw it at all.
	ReadySettle  time.Duration
	StartTimeout time.Duration
	// TurnStart is how long an agent may take, after a task is submitted
	// (text, then Enter), before its screen shows the work: until then its
	// idle screen reads working. 0: the agent shows work at once.
	TurnStart time.Duration

	Rules   []Rule
	Answers map[string]string
}

// Rule is one compiled rule.
type Rule struct {
	ID      string
	State   State
	Kind    string
	Region  Region
	Pattern *regexp.Regexp
	// msgGroup is the index of the named group "msg", or -1.
	msgGroup int
	// literal is text every match must contain (derived from the pattern):
	// a region without it is skipped without running the pattern.
	literal string
	// Note explains the rule: the screen it was written from.
	Note string
	// Answers are this prompt's own keystrokes, where they differ from the
	// manifest's (a trust screen taking Enter where approvals take "y").
	Answers map[string]string
	// AnswersOnly: the prompt takes Answers and nothing else; the
	// manifest's (an option number, "always") are refused, not typed
	// into a prompt that ignores them.
	AnswersOnly bool
	// Choices are the prompt's own answers beyond the built-in names
	// (Claude Code's auto-mode notice: shift+Tab leaves for accept edits
	// mode). They exist only while this rule reads the prompt.
	Choices []Choice
}

// Choice is an answer a rule declares for its prompt: a name that
// corral answer takes, the keys it types and what it does.
type Choice struct {
	Name  string
	Keys  string
	Label string
}

// file mirrors the TOML schema.
type file struct {
	Name        string            `toml:"name"`
	Display     string            `toml:"display"`
	Description string            `toml:"description"`
	Evidence    string            `toml:"evidence"`
	Detect      detectSection     `toml:"detect"`
	Timing      timingSection     `toml:"timing"`
	Answers     map[string]string `toml:"answers"`
	Rules       []ruleSection     `toml:"rule"`
}

type detectSection struct {
	Process []string `toml:"process"`
	Argv    []string `toml:"argv"`
	Title   string   `toml:"title"`
	Screen  string   `toml:"screen"`
}

type timingSection struct {
	IdleConfirm  string `toml:"idle_confirm"`
	AnswerSettle string `toml:"answer_settle"`
	ReadySettle  string `toml:"ready_settle"`
	StartTimeout string `toml:"start_timeout"`
	TurnStart    string `toml:"turn_start"`
}

type ruleSection struct {
	ID          string            `toml:"id"`
	State       string            `toml:"state"`
	Kind        string            `toml:"kind"`
	Region      string            `toml:"region"`
	Pattern     string            `toml:"pattern"`
	Note        string            `toml:"note"`
	Answers     map[string]string `toml:"answers"`
	AnswersOnly bool              `toml:"answers_only"`
	Choices     []choiceSection   `toml:"choices"`
}

type choiceSection struct {
	Name  string `toml:"name"`
	Keys  string `toml:"keys"`
	Label string `toml:"label"`
}

// Error is a problem in a manifest, located in its file.
type Error struct {
	File         string
	Line, Column int // 0 when unknown
	Msg          string
	// Snippet is the source around the problem, when known.
	Snippet string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Column)
	}
	return loc + ": " + e.Msg
}

// Parse compiles a manifest. source names it in errors. All problems are
// returned (joined), each with file:line:column where it can be found.
func Parse(source string, data []byte) (*Manifest, error) {
	if len(data) > MaxManifestBytes {
		return nil, &Error{File: source, Msg: fmt.Sprintf("manifest is %d bytes; the limit is %d", len(data), MaxManifestBytes)}
	}
	var f file
	if ps := tomlfile.Strict(data, &f); ps != nil {
		return nil, decodeError(source, data, ps)
	}
	loc := newLocator(data)
	var errs []error
	fail := func(rule int, key, format string, args ...any) {
		line, col := loc.find(rule, key)
		errs = append(errs, &Error{File: source, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)})
	}

	m := &Manifest{
		Name: f.Name, Display: f.Display, Description: f.Description, Evidence: f.Evidence,
		Source: source, Processes: f.Detect.Process, IdleConfirm: DefaultConfirm, AnswerSettle: DefaultSettle,
		Answers: map[string]string{},
	}
	if !idPattern().MatchString(f.Name) {
		fail(-1, "name", "name %q must be 1-64 of [a-z0-9_-], starting with a letter or digit", f.Name)
	}
	if m.Display == "" {
		m.Display = m.Name
	}
	if len(f.Detect.Process)+len(f.Detect.Argv) > MaxDetect {
		fail(-1, "process", "at most %d process names and argv patterns", MaxDetect)
	}
	for _, p := range f.Detect.Argv {
		re, err := compile(p)
		if err != nil {
			fail(-1, "argv", "detect.argv %q: %v", p, err)
			continue
		}
		m.argv = append(m.argv, re)
	}
	var err error
	if f.Detect.Title != "" {
		if m.title, err = compile(f.Detect.Title); err != nil {
			fail(-1, "title", "detect.title: %v", err)
		}
	}
	if f.Detect.Screen != "" {
		if m.screen, err = compile(f.Detect.Screen); err != nil {
			fail(-1, "screen", "detect.screen: %v", err)
		}
	}
	if f.Timing.AnswerSettle != "" {
		d, err := time.ParseDuration(f.Timing.AnswerSettle)
		if err != nil || d < 0 || d > MaxSettle {
			fail(-1, "answer_settle", "timing.answer_settle %q must be a duration from 0 to %v (like \"400ms\")", f.Timing.AnswerSettle, MaxSettle)
		} else {
			m.AnswerSettle = d
		}
	}
	if f.Timing.IdleConfirm != "" {
		d, err := time.ParseDuration(f.Timing.IdleConfirm)
		if err != nil || d < 0 || d > MaxConfirm {
			fail(-1, "idle_confirm", "timing.idle_confirm %q must be a duration from 0 to %v (like \"300ms\")", f.Timing.IdleConfirm, MaxConfirm)
		} else {
			m.IdleConfirm = d
		}
	}
	m.ReadySettle = m.IdleConfirm
	if f.Timing.ReadySettle != "" {
		d, err := time.ParseDuration(f.Timing.ReadySettle)
		if err != nil || d < 0 || d > MaxSettle {
			fail(-1, "ready_settle", "timing.ready_settle %q must be a duration from 0 to %v (like \"500ms\")", f.Timing.ReadySettle, MaxSettle)
		} else {
			m.ReadySettle = d
		}
	}
	m.StartTimeout = DefaultStart
	if f.Timing.StartTimeout != "" {
		d, err := time.ParseDuration(f.Timing.StartTimeout)
		if err != nil || d <= 0 || d > MaxStart {
			fail(-1, "start_timeout", "timing.start_timeout %q must be a duration above 0 and at most %v (like \"60s\")", f.Timing.StartTimeout, MaxStart)
		} else {
			m.StartTimeout = d
		}
	}
	m.TurnStart = DefaultTurnStart
	if f.Timing.TurnStart != "" {
		d, err := time.ParseDuration(f.Timing.TurnStart)
		if err != nil || d < 0 || d > MaxTurnStart {
			fail(-1, "turn_start", "timing.turn_start %q must be a duration from 0 to %v (like \"5s\")", f.Timing.TurnStart, MaxTurnStart)
		} else {
			m.TurnStart = d
		}
	}
	m.Answers = compileAnswers(f.Answers, func(name, format string, args ...any) { fail(-1, name, format, args...) })
	if len(f.Rules) > MaxRules {
		fail(-1, "rule", "%d rules; the limit is %d", len(f.Rules), MaxRules)
		f.Rules = f.Rules[:MaxRules]
	}
	seen := map[string]bool{}
	for i, rs := range f.Rules {
		r, ok := compileRule(i, rs, func(key, format string, args ...any) { fail(i, key, format, args...) })
		if !ok {
			continue
		}
		if seen[r.ID] {
			fail(i, "id", "rule %q: duplicate id", r.ID)
			continue
		}
		seen[r.ID] = true
		m.Rules = append(m.Rules, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return m, nil
}

// compileAnswers checks answer keystrokes: known names, 1 to MaxKeystrokes
// bytes, and {n} in the option template.
func compileAnswers(in map[string]string, fail func(key, format string, args ...any)) map[string]string {
	out := map[string]string{}
	for name, keys := range in {
		switch name {
		case AnswerYes, AnswerAlways, AnswerNo, AnswerCancel, AnswerOption:
		default:
			fail(name, "answers.%s: unknown answer; use yes, always, no, cancel or option", name)
			continue
		}
		if keys == "" || len(keys) > MaxKeystrokes {
			fail(name, "answers.%s: keystrokes must be 1-%d bytes", name, MaxKeystrokes)
			continue
		}
		if name == AnswerOption && !strings.Contains(keys, "{n}") {
			fail(name, "answers.option must contain {n}, the option number")
			continue
		}
		out[name] = keys
	}
	return out
}

// compileChoices checks a rule's own choices: each named (a lowercase
// word that is no built-in answer nor an option number, once), its keys 1
// to MaxKeystrokes bytes, its label one short line.
func compileChoices(in []choiceSection, fail func(format string, args ...any)) []Choice {
	if len(in) > MaxChoices {
		fail("%d choices; the limit is %d", len(in), MaxChoices)
		return nil
	}
	var out []Choice
	seen := map[string]bool{}
	for i, c := range in {
		at := fmt.Sprintf("choices[%d]", i+1)
		if c.Name != "" {
			at = fmt.Sprintf("choices[%d] %q", i+1, c.Name)
		}
		good := true
		switch {
		case c.Name == "":
			fail("%s: name is required", at)
			good = false
		case builtinAnswers[c.Name]:
			fail("%s: name is a built-in answer (yes, always, no, cancel, option); name the choice after what it does", at)
			good = false
		case len(c.Name) > MaxChoiceName || !choiceName().MatchString(c.Name):
			fail("%s: name must be 1-%d of [a-z0-9-], starting with a letter (a number is an option's)", at, MaxChoiceName)
			good = false
		case seen[c.Name]:
			fail("%s: name declared twice", at)
			good = false
		}
		seen[c.Name] = true
		if c.Keys == "" || len(c.Keys) > MaxKeystrokes {
			fail("%s: keys must be 1-%d bytes", at, MaxKeystrokes)
			good = false
		}
		switch {
		case strings.TrimSpace(c.Label) == "":
			fail("%s: label is required: what the choice does, as the agent says it", at)
			good = false
		case utf8.RuneCountInString(c.Label) > MaxChoiceLabel:
			fail("%s: label is %d characters; the limit is %d", at, utf8.RuneCountInString(c.Label), MaxChoiceLabel)
			good = false
		case strings.ContainsFunc(c.Label, unicode.IsControl):
			fail("%s: label must be one line of text, without control characters", at)
			good = false
		}
		if good {
			out = append(out, Choice{Name: c.Name, Keys: c.Keys, Label: c.Label})
		}
	}
	return out
}

func compileRule(i int, rs ruleSection, fail func(key, format string, args ...any)) (Rule, bool) {
	name := rs.ID
	if name == "" {
		name = fmt.Sprintf("#%d", i+1)
	}
	ok := true
	r := Rule{ID: rs.ID, Kind: rs.Kind, Note: rs.Note, AnswersOnly: rs.AnswersOnly, msgGroup: -1}
	if !idPattern().MatchString(rs.ID) {
		fail("id", "rule %s: id %q must be 1-64 of [a-z0-9_-]", name, rs.ID)
		ok = false
	}
	switch State(rs.State) {
	case Blocked, Working, Idle:
		r.State = State(rs.State)
	default:
		fail("state", "rule %s: state %q must be blocked, working or idle", name, rs.State)
		ok = false
	}
	if rs.Kind != "" {
		if r.State != Blocked {
			fail("kind", "rule %s: kind is only for blocked rules", name)
			ok = false
		} else if !kinds[rs.Kind] {
			fail("kind", "rule %s: kind %q must be permission, question or auth", name, rs.Kind)
			ok = false
		}
	}
	reg, err := ParseRegion(rs.Region)
	if err != nil {
		fail("region", "rule %s: %v", name, err)
		ok = false
	}
	r.Region = reg
	if rs.Pattern == "" {
		fail("pattern", "rule %s: pattern is required", name)
		return r, false
	}
	re, err := compile(rs.Pattern)
	if err != nil {
		fail("pattern", "rule %s: %v", name, err)
		return r, false
	}
	if len(rs.Answers) > 0 {
		if r.State != Blocked {
			fail("answers", "rule %s: answers are only for blocked rules", name)
			ok = false
		}
		r.Answers = compileAnswers(rs.Answers, func(key, format string, args ...any) {
			fail("answers", "rule %s: "+format, append([]any{name}, args...)...)
			ok = false
		})
	}
	if rs.AnswersOnly && len(rs.Answers) == 0 {
		fail("answers_only", "rule %s: answers_only needs answers: the keys this prompt takes", name)
		ok = false
	}
	if len(rs.Choices) > 0 {
		if r.State != Blocked {
			fail("choices", "rule %s: choices are only for blocked rules", name)
			ok = false
		}
		r.Choices = compileChoices(rs.Choices, func(format string, args ...any) {
			fail("choices", "rule %s: "+format, append([]any{name}, args...)...)
			ok = false
		})
	}
	r.Pattern = re
	r.msgGroup = re.SubexpIndex("msg")
	r.literal = requiredLiteral(rs.Pattern)
	return r, ok
}

func compile(p string) (*regexp.Regexp, error) {
	if len(p) > MaxPatternBytes {
		return nil, fmt.Errorf("pattern is %d bytes; the limit is %d", len(p), MaxPatternBytes)
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("bad pattern: %v", err)
	}
	return re, nil
}

// requiredLiteral returns the longest case-sensitive literal that any match
// of the pattern must contain, or "". Only literals that are direct parts
// of the pattern's top-level sequence (through capture groups) count, so
// the answer is exact: text without the literal cannot match.
func requiredLiteral(pattern string) string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return ""
	}
	best := ""
	var walk func(*syntax.Regexp)
	walk = func(n *syntax.Regexp) {
		switch n.Op {
		case syntax.OpCapture:
			walk(n.Sub[0])
		case syntax.OpConcat:
			for _, sub := range n.Sub {
				walk(sub)
			}
		case syntax.OpLiteral:
			if n.Flags&syntax.FoldCase == 0 {
				if lit := string(n.Rune); len(lit) > len(best) {
					best = lit
				}
			}
		}
	}
	walk(re)
	return best
}
