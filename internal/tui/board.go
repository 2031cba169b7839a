// Package tui is the terminal board: every pane grouped by state (blocked
// first), and in a fleet by host first (this host, then the others with
// their reachability), with its agent, name, folder, time in state and message, a
// preview of the selected pane's screen, and keys to answer, jump to the
// next blocked pane, attach, kill and filter.
package tui

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/client"
)

// Refresh is how often the board reads the panes.
const Refresh = 250 * time.Millisecond

// stateOrder groups panes: the ones that need a person first.
var stateOrder = map[string]int{"blocked": 0, "error": 1, "done": 2, "working": 3, "idle": 4, "exited": 5, "lost": 6}

// Board is the bubbletea model.
type Board struct {
	c       *client.Client
	exe     string // corral's binary, for attach
	panes   []api.Pane
	fleet   *fleetInfo // nil outside a fleet
	preview []string
	sel     string // selected pane id
	filter  string
	typing  bool         // editing the filter
	choices []api.Choice // the selected prompt's own choices, while one is being picked
	vis     []api.Pane   // the panes the filter lets through; nil until computed
	visOK   bool         // vis is current for panes and filter
	status  string
	width   int
	height  int
	err     error
}

// New returns a board reading from c; exe is corral's own binary.
func New(c *client.Client, exe string) *Board { return &Board{c: c, exe: exe, width: 100, height: 30} }

// Run shows the board until the user quits; status is its first status line.
func Run(ctx context.Context, c *client.Client, exe, status string) error {
	b := New(c, exe)
	b.status = status
	_, err := tea.NewProgram(b, tea.WithContext(ctx)).Run()
	return err
}

type panesMsg struct {
	tick    bool          // from the refresh loop, which goes on after it
	took    time.Duration // how long the read took
	panes   []api.Pane
	fleet   *fleetInfo // nil outside a fleet
	preview []string
	err     error
}

type tickMsg struct{}

type statusMsg string

func (b *Board) Init() tea.Cmd { return b.refresh(true) }

// fetch reads the panes now (after a key), outside the refresh loop.
func (b *Board) fetch() tea.Cmd { return b.refresh(false) }

// refresh reads the panes and the selected pane's screen. Only the
// refresh loop's own reads schedule the next one: a read per key that
// scheduled one too would start another loop on every key press.
func (b *Board) refresh(tick bool) tea.Cmd {
	sel := b.sel
	return func() tea.Msg {
		start := time.Now()
		msg := b.read(sel)
		msg.tick, msg.took = tick, time.Since(start)
		return msg
	}
}

// read reads the panes (and the fleet's) and sel's screen.
func (b *Board) read(sel string) panesMsg {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var panes []api.Pane
	if err := b.c.Do(ctx, "GET", "/v1/panes", nil, &panes); err != nil {
		return panesMsg{err: err}
	}
	fleet, remote := fleetPanes(ctx, b.c)
	if fleet != nil {
		for i := range panes {
			panes[i].Host = fleet.self
		}
	}
	panes = append(panes, remote...)
	var preview []string
	if sel != "" {
		var s api.Screen
		if b.c.Do(ctx, "GET", "/v1/panes/"+url.PathEscape(sel)+"/screen", nil, &s) == nil {
			preview = s.Lines
		}
	}
	return panesMsg{panes: panes, fleet: fleet, preview: preview}
}

func (b *Board) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		b.width, b.height = msg.Width, msg.Height
	case panesMsg:
		b.err = msg.err
		if msg.err == nil {
			b.fleet = msg.fleet
			b.panes = sortPanes(msg.panes, b.fleet)
			b.visOK = false
			b.preview = msg.preview
			if b.sel == "" || b.index(b.sel) < 0 {
				if v := b.visible(); len(v) > 0 {
					b.sel = v[0].ID
				}
			}
		}
		if !msg.tick {
			return b, nil
		}
		// A daemon with many panes is read less often: never more than a
		// third of the time.
		return b, tea.Tick(max(Refresh, 2*msg.took), func(time.Time) tea.Msg { return tickMsg{} })
	case tickMsg:
		return b, b.refresh(true)
	case statusMsg:
		b.status = string(msg)
	case tea.KeyPressMsg:
		return b.key(msg.String())
	}
	return b, nil
}

func (b *Board) key(k string) (tea.Model, tea.Cmd) {
	if b.choices != nil {
		return b.pick(k)
	}
	if b.typing {
		switch k {
		case "enter":
			b.typing = false
		case "esc":
			b.typing, b.filter = false, ""
		case "backspace":
			if b.filter != "" {
				_, n := utf8.DecodeLastRuneInString(b.filter)
				b.filter = b.filter[:len(b.filter)-n]
			}
		default:
			if utf8.RuneCountInString(k) == 1 {
				b.filter += k
			} else if k == "space" {
				b.filter += " "
			}
		}
		b.visOK = false
		if v := b.visible(); len(v) > 0 && b.index(b.sel) < 0 {
			b.sel = v[0].ID
		}
		return b, nil
	}
	switch k {
	case "q", "ctrl+c":
		return b, tea.Quit
	case "j", "down":
		b.move(1)
	case "k", "up":
		b.move(-1)
	case "pgdown", "ctrl+f", "space":
		b.move(b.listRows() - 1)
	case "pgup", "ctrl+b":
		b.move(-(b.listRows() - 1))
	case "home":
		b.move(-len(b.panes))
	case "end", "G":
		b.move(len(b.panes))
	case "g", "tab":
		b.nextBlocked()
	case "/":
		b.typing = true
	case "esc":
		b.filter, b.visOK = "", false
	case "y":
		return b, b.answer("yes")
	case "a":
		return b, b.answer("always")
	case "n":
		return b, b.answer("no")
	case "1", "2", "3", "4", "5", "6", "7", "8", "9":
		return b, b.answer(k)
	case "c":
		b.choose()
		return b, nil
	case "x":
		return b, b.kill()
	case "enter":
		if cmd := b.attach(); cmd != nil {
			return b, cmd
		}
	}
	return b, b.fetch()
}

// attach runs corral attach on the selected pane, this terminal its own
// until it detaches; another host's pane (HOST:ID) is attached through the
// fleet, read-only when this host's credential is observe-only. What
// attach said last (why it ended, or why it could not start) becomes
// the status line: the board's screen hides what it printed.
func (b *Board) attach() tea.Cmd {
	p := b.selected()
	if p == nil {
		return nil
	}
	if p.Unreachable {
		b.status = fmt.Sprintf("%s: host %s is unreachable; its pane can be attached once it is back", p.ID, p.Host)
		return nil
	}
	cmd := exec.Command(b.exe, "attach", p.ID)
	cmd.Env = os.Environ()
	said := &lastLine{}
	cmd.Stderr = said
	return tea.ExecProcess(cmd, func(err error) tea.Msg {
		if s := said.String(); s != "" {
			return statusMsg(s)
		}
		if err != nil {
			return statusMsg("attach: " + err.Error())
		}
		return statusMsg("detached")
	})
}

// lastLine keeps the last line written to it, without brackets and
// blanks ("[detached from b:fp]" is "detached from b:fp").
type lastLine struct {
	mu   sync.Mutex
	line string
	part []byte
}

func (l *lastLine) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part = append(l.part, b...)
	for {
		i := bytes.IndexAny(l.part, "\r\n")
		if i < 0 {
			break
		}
		if s := strings.Trim(string(l.part[:i]), " []"); s != "" {
			l.line = s
		}
		l.part = l.part[i+1:]
	}
	if len(l.part) > 4096 {
		l.part = l.part[len(l.part)-4096:]
	}
	return len(b), nil
}

func (l *lastLine) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := strings.Trim(string(l.part), " []"); s != "" {
		return s
	}
	return l.line
}

// choose starts picking one of the selected prompt's own choices (its
// rule's, such as Claude Code's accept-edits): they are numbered on the
// status line, and a digit answers with one.
func (b *Board) choose() {
	p := b.selected()
	if p == nil {
		return
	}
	if p.Prompt == nil || len(p.Prompt.Choices) == 0 {
		b.status = p.ID + ": its prompt has no choices of its own"
		return
	}
	b.choices = p.Prompt.Choices
	parts := []string{}
	for i, c := range b.choices {
		parts = append(parts, fmt.Sprintf("%d %s (%s)", i+1, c.Label, c.Name))
	}
	b.status = p.ID + ": choose " + strings.Join(parts, " · ") + " · esc back"
}

// pick answers with the choice a digit numbers; any other key leaves the
// choices unpicked.
func (b *Board) pick(k string) (tea.Model, tea.Cmd) {
	choices := b.choices
	b.choices = nil
	if n := strings.Index("123456789", k); len(k) == 1 && n >= 0 && n < len(choices) {
		return b, b.answer(choices[n].Name)
	}
	b.status = ""
	return b, nil
}

func (b *Board) answer(choice string) tea.Cmd {
	id := b.sel
	if id == "" {
		return nil
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		var res api.AnswerResult
		if err := b.c.Do(ctx, "POST", "/v1/panes/"+url.PathEscape(id)+"/answer", api.AnswerRequest{Choice: choice}, &res); err != nil {
			return statusMsg(fmt.Sprintf("%s: %v", id, err))
		}
		return statusMsg(fmt.Sprintf("%s: answered %s", id, choice))
	}
}

func (b *Board) kill() tea.Cmd {
	id := b.sel
	if id == "" {
		return nil
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := b.c.Do(ctx, "POST", "/v1/panes/"+url.PathEscape(id)+"/kill", api.KillRequest{}, nil); err != nil {
			return statusMsg(fmt.Sprintf("%s: %v", id, err))
		}
		return statusMsg(id + ": killed")
	}
}

// sortPanes orders the panes by host (this host first; one host outside a
// fleet), then by state.
func sortPanes(ps []api.Pane, f *fleetInfo) []api.Pane {
	rank := func(p api.Pane) string {
		if f == nil || p.Host == f.self {
			return ""
		}
		return "\x01" + p.Host
	}
	sort.SliceStable(ps, func(i, j int) bool {
		if ri, rj := rank(ps[i]), rank(ps[j]); ri != rj {
			return ri < rj
		}
		return stateOrder[ps[i].State] < stateOrder[ps[j].State]
	})
	return ps
}

// visible is the panes the filter lets through, in board order; it is
// worked out again only when the panes or the filter change, not per
// frame or key.
func (b *Board) visible() []api.Pane {
	if b.filter == "" {
		return b.panes
	}
	if b.visOK {
		return b.vis
	}
	out := []api.Pane{}
	f := strings.ToLower(b.filter)
	for _, p := range b.panes {
		for _, field := range [...]string{p.ID, p.Name, p.Agent, p.State, p.Kind, p.Host, p.Cwd, p.Message} {
			if strings.Contains(strings.ToLower(field), f) {
				out = append(out, p)
				break
			}
		}
	}
	b.vis, b.visOK = out, true
	return out
}

// listRows is how many rows the list of panes takes: half the screen.
func (b *Board) listRows() int { return max(3, b.height/2-2) }

func (b *Board) index(id string) int {
	for i, p := range b.visible() {
		if p.ID == id {
			return i
		}
	}
	return -1
}

func (b *Board) move(d int) {
	v := b.visible()
	if len(v) == 0 {
		return
	}
	i := b.index(b.sel) + d
	i = max(0, min(len(v)-1, i))
	b.sel = v[i].ID
}

// nextBlocked selects the next blocked pane after the selection, wrapping.
func (b *Board) nextBlocked() {
	v := b.visible()
	start := b.index(b.sel)
	for k := 1; k <= len(v); k++ {
		p := v[(start+k+len(v))%len(v)]
		if p.State == "blocked" {
			b.sel = p.ID
			return
		}
	}
	b.status = "no pane is blocked"
}

// fleetInfo is what the board knows of the fleet: this host's name and
// every host's reachability.
type fleetInfo struct {
	self  string
	hosts []fleetHost
}

type fleetHost struct {
	Host      string `json:"host"`
	Reachable bool   `json:"reachable"`
	LastSeen  string `json:"last_seen"`
	Problem   string `json:"problem"`
}

func (f *fleetInfo) host(name string) (fleetHost, bool) {
	for _, h := range f.hosts {
		if h.Host == name {
			return h, true
		}
	}
	return fleetHost{}, false
}

// fleetPanes are the fleet (nil outside one) and the other hosts' panes,
// named HOST:ID (pane commands take that form) and HOST:NAME.
func fleetPanes(ctx context.Context, c *client.Client) (*fleetInfo, []api.Pane) {
	var st struct {
		Name  string      `json:"name"`
		Hosts []fleetHost `json:"hosts"`
	}
	if c.Do(ctx, "GET", "/v1/fleet/status", nil, &st) != nil || st.Name == "" {
		return nil, nil
	}
	f := &fleetInfo{self: st.Name, hosts: st.Hosts}
	var recs []api.Pane
	if c.Do(ctx, "GET", "/v1/fleet/panes", nil, &recs) != nil {
		return f, nil
	}
	reach := map[string]bool{}
	for _, h := range st.Hosts {
		reach[h.Host] = h.Reachable
	}
	var out []api.Pane
	for _, p := range recs {
		if p.Host == st.Name {
			continue
		}
		p.ID = p.Host + ":" + p.ID
		if p.Name != "" {
			p.Name = p.Host + ":" + p.Name
		}
		p.Unreachable = !reach[p.Host]
		out = append(out, p)
	}
	return f, out
}
