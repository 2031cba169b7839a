package rules

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// RegionKind says which part of a screen a rule reads.
type RegionKind uint8

const (
	// RegionScreen is every visible row.
	RegionScreen RegionKind = iota + 1
	// RegionBottom is the bottom N non-empty rows.
	RegionBottom
	// RegionBelowLastRule is the rows below the last horizontal rule
	// (empty when the screen has none).
	RegionBelowLastRule
	// RegionAboveLastRule is the rows above the last horizontal rule.
	RegionAboveLastRule
	// RegionTitle is the window title.
	RegionTitle
)

// Region is a parsed region: a kind and, for RegionBottom, a row count.
type Region struct {
	Kind RegionKind
	N    int
}

// ParseRegion reads "screen", "bottom:N", "below_last_rule",
// "above_last_rule" or "title". An empty string means "screen".
func ParseRegion(s string) (Region, error) {
	switch s {
	case "", "screen":
		return Region{Kind: RegionScreen}, nil
	case "below_last_rule":
		return Region{Kind: RegionBelowLastRule}, nil
	case "above_last_rule":
		return Region{Kind: RegionAboveLastRule}, nil
	case "title":
		return Region{Kind: RegionTitle}, nil
	}
	if n, ok := strings.CutPrefix(s, "bottom:"); ok {
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 || v > MaxBottomRows {
			return Region{}, fmt.Errorf("region %q: bottom:N needs N from 1 to %d", s, MaxBottomRows)
		}
		return Region{Kind: RegionBottom, N: v}, nil
	}
	return Region{}, fmt.Errorf("unknown region %q; use screen, bottom:N, below_last_rule, above_last_rule or title", s)
}

func (r Region) String() string {
	switch r.Kind {
	case RegionScreen:
		return "screen"
	case RegionBottom:
		return "bottom:" + strconv.Itoa(r.N)
	case RegionBelowLastRule:
		return "below_last_rule"
	case RegionAboveLastRule:
		return "above_last_rule"
	case RegionTitle:
		return "title"
	}
	return "invalid"
}

// Screen is what rules read: the visible rows (never scrollback) and the
// window title.
type Screen struct {
	Lines []string
	Title string
}

// view extracts regions of one screen, each at most once.
type view struct {
	s          Screen
	lastRule   int // -2 not computed, -1 none
	screenText string
	haveScreen bool
}

func newView(s Screen) *view { return &view{s: s, lastRule: -2} }

func (v *view) text(r Region) string {
	switch r.Kind {
	case RegionTitle:
		return strings.TrimSpace(v.s.Title)
	case RegionScreen:
		if !v.haveScreen {
			v.screenText = strings.Join(v.s.Lines, "\n")
			v.haveScreen = true
		}
		return v.screenText
	case RegionBottom:
		return bottomRows(v.s.Lines, r.N)
	case RegionBelowLastRule:
		i := v.lastRuleRow()
		if i < 0 {
			return ""
		}
		return strings.Join(v.s.Lines[i+1:], "\n")
	case RegionAboveLastRule:
		i := v.lastRuleRow()
		if i < 0 {
			return ""
		}
		return strings.Join(v.s.Lines[:i], "\n")
	}
	return ""
}

func (v *view) lastRuleRow() int {
	if v.lastRule == -2 {
		v.lastRule = -1
		for i := len(v.s.Lines) - 1; i >= 0; i-- {
			if IsHorizontalRule(v.s.Lines[i]) {
				v.lastRule = i
				break
			}
		}
	}
	return v.lastRule
}

// bottomRows joins the last n non-empty rows, top to bottom.
func bottomRows(lines []string, n int) string {
	start := len(lines)
	for count := 0; start > 0 && count < n; {
		start--
		if strings.TrimSpace(lines[start]) != "" {
			count++
		}
	}
	var b strings.Builder
	first := true
	if n == 1 {
		// One row: itself, no copy (the generic manifest's rules read
		// the bottom row of every screen at every classification).
		for _, l := range lines[start:] {
			if strings.TrimSpace(l) != "" {
				return l
			}
		}
		return ""
	}
	for _, l := range lines[start:] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if !first {
			b.WriteByte('\n')
		}
		b.WriteString(l)
		first = false
	}
	return b.String()
}

// MinRuleWidth is the shortest run of line-drawing characters that counts
// as a horizontal rule.
const MinRuleWidth = 10

// IsHorizontalRule reports whether a row is a horizontal rule: at least
// MinRuleWidth characters, all of them horizontal line-drawing characters
// (box corners do not count: a box's top edge is not a separator).
func IsHorizontalRule(line string) bool {
	s := strings.TrimSpace(line)
	if utf8.RuneCountInString(s) < MinRuleWidth {
		return false
	}
	for _, r := range s {
		switch r {
		case '─', '━', '═', '╌', '╍', '┄', '┅', '┈', '┉', '▀', '▄', '▔', '▁':
		default:
			return false
		}
	}
	return true
}

// RegionText is the part of a screen the rule with this id reads (ok is
// false when the manifest has no such rule): what a prompt a rule
// recognised shows, apart from the rest of the screen.
func (m *Manifest) RegionText(ruleID string, s Screen) (string, bool) {
	for _, r := range m.Rules {
		if r.ID == ruleID {
			return newView(s).text(r.Region), true
		}
	}
	return "", false
}
