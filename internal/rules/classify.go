package rules

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// Verdict is what a manifest concludes about a screen, and why.
type Verdict struct {
	State State
	Kind  string
	// Rule is the id of the rule that matched; empty when none did and the
	// verdict is the default (idle).
	Rule   string
	Region Region
	// Evidence is the matched text, clipped.
	Evidence string
	// Message is the rule's "msg" capture group, when it has one.
	Message string
}

// MaxEvidence bounds Verdict.Evidence.
const MaxEvidence = 200

// Classify runs the rules in order; the first match wins. No match is idle.
func (m *Manifest) Classify(s Screen) Verdict {
	v := newView(s)
	for i := range m.Rules {
		r := &m.Rules[i]
		if vd, ok := r.match(v.text(r.Region)); ok {
			return vd
		}
	}
	return Verdict{State: Idle}
}

func (r *Rule) match(text string) (Verdict, bool) {
	if text == "" || (r.literal != "" && !strings.Contains(text, r.literal)) {
		return Verdict{}, false
	}
	loc := r.Pattern.FindStringSubmatchIndex(text)
	if loc == nil {
		return Verdict{}, false
	}
	vd := Verdict{State: r.State, Kind: r.Kind, Rule: r.ID, Region: r.Region, Evidence: clip(text[loc[0]:loc[1]], MaxEvidence)}
	if g := r.msgGroup; g > 0 && loc[2*g] >= 0 {
		vd.Message = clip(strings.TrimSpace(text[loc[2*g]:loc[2*g+1]]), MaxEvidence)
	}
	return vd, true
}

// Trial is one rule's outcome in an explanation.
type Trial struct {
	Rule     string
	State    State
	Kind     string
	Region   Region
	Text     string // the region's text as the rule saw it
	Matched  bool
	Evidence string
	Message  string
	Note     string
}

// Explanation shows every rule tried, in order, and the verdict.
type Explanation struct {
	Manifest string
	Source   string
	Trials   []Trial
	Verdict  Verdict
}

// Explain runs every rule (not stopping at the first match, so a user sees
// which later rules would also have matched) and reports the verdict the
// first match gives.
func (m *Manifest) Explain(s Screen) Explanation {
	v := newView(s)
	ex := Explanation{Manifest: m.Name, Source: m.Source, Verdict: Verdict{State: Idle}}
	decided := false
	for i := range m.Rules {
		r := &m.Rules[i]
		text := v.text(r.Region)
		vd, ok := r.match(text)
		ex.Trials = append(ex.Trials, Trial{Rule: r.ID, State: r.State, Kind: r.Kind, Region: r.Region,
			Text: text, Matched: ok, Evidence: vd.Evidence, Message: vd.Message, Note: r.Note})
		if ok && !decided {
			ex.Verdict, decided = vd, true
		}
	}
	return ex
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Keys returns the keystrokes for an answer: "yes", "always", "no",
// "cancel", or an option number ("1", "2", …). ok is false when the
// manifest does not define it.
func (m *Manifest) Keys(choice string) (string, bool) { return m.KeysFor("", choice) }

// RecognisesPrompts reports whether the manifest has rules for the
// prompts its program draws: then only a prompt one of them recognises on
// screen is known well enough to answer with its keys.
func (m *Manifest) RecognisesPrompts() bool {
	for _, r := range m.Rules {
		if r.State == Blocked {
			return true
		}
	}
	return false
}

// KeysFor is Keys for the prompt a rule recognised: the rule's own
// answers first, then the manifest's (unless the rule takes only its own),
// and the rule's declared choices.
func (m *Manifest) KeysFor(rule, choice string) (string, bool) {
	for _, c := range m.ChoicesFor(rule) {
		if c.Name == choice {
			return c.Keys, true
		}
	}
	tables := []map[string]string{m.Answers}
	for _, r := range m.Rules {
		switch {
		case r.ID == rule && r.AnswersOnly:
			tables = []map[string]string{r.Answers}
		case r.ID == rule && len(r.Answers) > 0:
			tables = []map[string]string{r.Answers, m.Answers}
		}
	}
	for _, answers := range tables {
		if k, ok := answers[choice]; ok {
			return k, true
		}
		if n := choice; n != "" && strings.Trim(n, "0123456789") == "" && len(n) <= 3 {
			if tmpl, ok := answers[AnswerOption]; ok {
				return strings.ReplaceAll(tmpl, "{n}", n), true
			}
		}
	}
	return "", false
}

// ChoicesFor is the choices a rule declares for its prompt, beyond the
// built-in answers (none for "" or a rule without any).
func (m *Manifest) ChoicesFor(rule string) []Choice {
	if rule == "" {
		return nil
	}
	for i := range m.Rules {
		if m.Rules[i].ID == rule {
			return m.Rules[i].Choices
		}
	}
	return nil
}

// shortNameLen is where a kernel cuts a process's name: Linux keeps 15
// bytes in /proc/PID/comm, macOS 16 in p_comm.
const shortNameLen = 15

// MatchesProcess reports whether a process (its name, as in
// /proc/PID/comm, and its argv) is this manifest's agent. A name the
// kernel cut matches the entry it begins: "claude-code-ins" is
// "claude-code-insiders".
func (m *Manifest) MatchesProcess(name string, argv []string) bool {
	for _, p := range m.Processes {
		if p == name || len(name) >= shortNameLen && len(p) > len(name) && strings.HasPrefix(p, name) {
			return true
		}
	}
	if len(m.argv) == 0 || len(argv) == 0 {
		return false
	}
	joined := strings.Join(argv, " ")
	for _, re := range m.argv {
		if re.MatchString(joined) {
			return true
		}
	}
	return false
}

// MatchesScreen reports whether a screen shows this manifest's agent,
// from its title or visible rows.
func (m *Manifest) MatchesScreen(s Screen) bool {
	var text joinedScreen
	defer text.release()
	return m.matchesScreen(strings.TrimSpace(s.Title), s.Lines, &text)
}

// joinedScreen is a screen's rows joined by newlines, made once for every
// manifest a screen is read against, in a buffer taken from joinBufs and
// given back after (release). A pane whose program no manifest names (a
// shell, a build, a spinner) is identified again at each new output: its
// joins, a new string each time, were half of a spinning daemon's garbage.
type joinedScreen struct {
	buf *[]byte // nil until the first manifest reads it
}

// joinBufs holds the joins' buffers between identifications; the pool lets
// go of them when the heap is collected, so quiet panes keep none.
var joinBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// maxPooledJoin bounds a buffer given back to joinBufs: a huge screen's
// join is not kept for the next.
const maxPooledJoin = 64 << 10

func (j *joinedScreen) of(lines []string) []byte {
	if j.buf == nil {
		j.buf = joinBufs.Get().(*[]byte)
		b := (*j.buf)[:0]
		for i, l := range lines {
			if i > 0 {
				b = append(b, '\n')
			}
			b = append(b, l...)
		}
		*j.buf = b
	}
	return *j.buf
}

// release gives the buffer back; what of returned must no longer be read.
func (j *joinedScreen) release() {
	if j.buf != nil && cap(*j.buf) <= maxPooledJoin {
		joinBufs.Put(j.buf)
	}
	j.buf = nil
}

// matchesScreen is MatchesScreen with the title trimmed and the rows'
// join shared.
func (m *Manifest) matchesScreen(title string, lines []string, text *joinedScreen) bool {
	if m.title != nil && title != "" && m.title.MatchString(title) {
		return true
	}
	if m.screen != nil {
		return m.screen.Match(text.of(lines))
	}
	return false
}
