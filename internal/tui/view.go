package tui

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"

	"github.com/corral-dev/corral/internal/api"
)

var stateColour = map[string]string{"blocked": "1;31", "error": "31", "done": "32", "working": "33", "idle": "2", "exited": "2", "lost": "2"}

func (b *Board) View() tea.View {
	var out strings.Builder
	blocked := 0
	for _, p := range b.panes {
		if p.State == "blocked" {
			blocked++
		}
	}
	fmt.Fprintf(&out, "\x1b[1mcorral\x1b[0m  %d panes · \x1b[1;31m%d blocked\x1b[0m", len(b.panes), blocked)
	if b.filter != "" || b.typing {
		fmt.Fprintf(&out, "  filter: %s", b.filter)
		if b.typing {
			out.WriteString("▏")
		}
	}
	out.WriteString("\n")
	if b.fleet != nil {
		out.WriteString(clip(b.fleetLine(), b.width) + "\n")
	}
	if b.err != nil {
		fmt.Fprintf(&out, "\x1b[31mno daemon: %v\x1b[0m\n", b.err)
	}
	vis := b.visible()
	listRows := b.listRows()
	group, host := "", "\x00"
	rows := 0
	// Only the rows on screen are drawn, the selection kept in view.
	start := 0
	if i := b.index(b.sel); i >= listRows-2 {
		start = i - (listRows - 3)
	}
	for _, p := range vis[min(start, len(vis)):] {
		if rows >= listRows {
			break
		}
		if b.fleet != nil && p.Host != host {
			host, group = p.Host, ""
			out.WriteString(clip(b.hostHeader(p.Host), b.width) + "\n")
			rows++
		}
		if p.State != group {
			group = p.State
			fmt.Fprintf(&out, "\x1b[%sm%s\x1b[0m\n", stateColour[p.State], strings.ToUpper(group))
			rows++
		}
		marker := "  "
		if p.ID == b.sel {
			marker = "▸ "
		}
		state := p.State
		if p.Kind != "" {
			state += "/" + p.Kind
		}
		agent := p.Agent
		if p.IntegrationError != "" && p.State != "exited" {
			agent += "!" // no hooks; the preview says why
		}
		line := fmt.Sprintf("%s%-5s %-10s %-12s %-20s %6s  %s", marker, p.ID, clip(name(p), 10), clip(agent, 12), clip(state, 20),
			since(p.Since), clip(p.Message, max(10, b.width-64)))
		if p.ID == b.sel {
			line = "\x1b[7m" + line + "\x1b[0m"
		}
		out.WriteString(line + "\n")
		rows++
	}
	if b.fleet != nil {
		// Every host has its line, one with no pane shown too.
		shown := map[string]bool{}
		for _, p := range vis {
			shown[p.Host] = true
		}
		for _, h := range b.fleet.hosts {
			if !shown[h.Host] && rows < listRows {
				out.WriteString(clip(b.hostHeader(h.Host), b.width) + "\n")
				rows++
			}
		}
	}
	if len(vis) == 0 {
		out.WriteString("  no panes: start one with corral run -- COMMAND\n")
	}
	if sel := b.selected(); sel != nil {
		fmt.Fprintf(&out, "\x1b[2m── %s · %s · %s ──\x1b[0m\n", name(*sel), sel.Agent, sel.Cwd)
		room := max(3, b.height-rows-5)
		if sel.IntegrationError != "" && sel.State != "exited" {
			out.WriteString("\x1b[33m" + clip("no hooks: "+sel.IntegrationError, b.width) + "\x1b[0m\n")
			room--
		}
		for _, n := range paneNotes(*sel) {
			out.WriteString("\x1b[" + n[0] + "m" + clip(n[1], b.width) + "\x1b[0m\n")
			room--
		}
		lines := trimBlank(b.preview)
		if len(lines) > room {
			lines = lines[len(lines)-room:]
		}
		for _, l := range lines {
			out.WriteString(clip(l, b.width) + "\n")
		}
	}
	if len(vis) > listRows-2 {
		fmt.Fprintf(&out, "\x1b[2m%d of %d · PgUp/PgDn Home/End\x1b[0m\n", min(len(vis), start+1), len(vis))
		rows++
	}
	help := "j/k move · g next blocked · y/a/n/1-9 answer · c choices · enter attach · x kill · / filter · q quit"
	if b.status != "" {
		help = b.status + "  ·  " + help
	}
	out.WriteString("\x1b[2m" + clip(help, b.width) + "\x1b[0m")
	v := tea.NewView(out.String())
	v.AltScreen = true
	v.WindowTitle = fmt.Sprintf("corral (%d blocked)", blocked)
	return v
}

// fleetLine names every host of the fleet, marking those unreachable.
func (b *Board) fleetLine() string {
	var parts []string
	down := 0
	for _, h := range b.fleet.hosts {
		s := h.Host
		if h.Host == b.fleet.self {
			s += " (this host)"
		}
		if !h.Reachable {
			s = "\x1b[31m" + s + " unreachable\x1b[0m"
			down++
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("fleet: %d hosts, %d unreachable · %s", len(b.fleet.hosts), down, strings.Join(parts, " · "))
}

// hostHeader heads a host's panes: its name and reachability.
func (b *Board) hostHeader(name string) string {
	h, known := b.fleet.host(name)
	what := "reachable"
	switch {
	case name == b.fleet.self:
		what = "this host"
	case !known:
		what = "\x1b[31munreachable (never sent a heartbeat)\x1b[0m\x1b[1m"
	case h.Problem != "":
		what = "\x1b[31munreachable: " + h.Problem + "\x1b[0m\x1b[1m"
	case !h.Reachable:
		what = "\x1b[31munreachable (last seen " + since(h.LastSeen) + " ago; its panes show their last known states)\x1b[0m\x1b[1m"
	}
	n := 0
	for _, p := range b.panes {
		if p.Host == name {
			n++
		}
	}
	count := "no panes"
	switch {
	case n == 1:
		count = "1 pane"
	case n > 1:
		count = fmt.Sprintf("%d panes", n)
	}
	return "\x1b[1m═ " + name + " · " + what + " · " + count + "\x1b[0m"
}

func (b *Board) selected() *api.Pane {
	for i := range b.panes {
		if b.panes[i].ID == b.sel {
			return &b.panes[i]
		}
	}
	return nil
}

func name(p api.Pane) string {
	if p.Name != "" {
		return p.Name
	}
	return p.ID
}

func since(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return "?"
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("%dh", int(d.Hours()))
}

func clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func trimBlank(lines []string) []string {
	end := len(lines)
	for end > 0 && strings.TrimSpace(lines[end-1]) == "" {
		end--
	}
	return lines[:end]
}

// paneNotes are the selected pane's worktree and its policy's latest
// decision, one line each: its colour (SGR) and text.
func paneNotes(p api.Pane) [][2]string {
	var out [][2]string
	if w := p.Worktree; w != nil {
		l := "⎇ " + w.Branch
		if w.Ahead > 0 {
			l += fmt.Sprintf(" ↑%d", w.Ahead)
		}
		if w.Behind > 0 {
			l += fmt.Sprintf(" ↓%d", w.Behind)
		}
		colour := "2"
		if w.Dirty {
			l += " dirty"
			colour = "33"
		} else {
			l += " clean"
		}
		out = append(out, [2]string{colour, l + " · " + w.Path})
	}
	if a := p.Approval; a != nil {
		colour := map[string]string{"allow": "32", "deny": "31"}[a.Decision]
		if colour == "" {
			colour = "2"
		}
		out = append(out, [2]string{colour, a.Text + " (" + since(a.Time) + " ago)"})
	}
	if l := promptLine(p.Prompt); l != "" {
		out = append(out, [2]string{"1;31", l})
	}
	return out
}

// promptLine says what a blocked pane's prompt takes, its own choices
// (picked with c) by their labels; "" when it takes none of its own.
func promptLine(pr *api.Prompt) string {
	if pr == nil || len(pr.Choices) == 0 {
		return ""
	}
	takes := append([]string(nil), pr.Answers...)
	if pr.Options {
		takes = append(takes, "1-9")
	}
	var own []string
	for _, c := range pr.Choices {
		own = append(own, c.Label)
	}
	l := "c: " + strings.Join(own, " · ")
	if len(takes) > 0 {
		l = "takes " + strings.Join(takes, ", ") + " · " + l
	}
	return l
}
